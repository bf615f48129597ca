#pragma once
// The policy plugin interface (docs/design.md#plugins). Plugins are small pure functions of
// (pod, node snapshot, args); the Runner owns timing, range checks and weights.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/policy/thresholds.h"

namespace tidal {

// Per-pod data computed once per scheduling cycle (the PreFilter step).
struct CycleState {
  const PodDemand* pod = nullptr;
  EffectiveThresholds thresholds;
  Bytes memory_need_per_gpu = 0;  // declared or estimated
  bool uses_nvlink = false;       // required or auto-detected: NVLink load counts for it
  bool nvlink_required = false;   // explicitly required: multi-GPU sets must be linked
  int nvlink_slots_per_gpu = 2;
};

// Per-node data produced by filters and read by scorers (the chosen GPUs).
struct NodeScratch {
  GpuSet gpus;
  int nvlink_links = 0;  // links inside the chosen set, summed over pairs
  Bytes fit_slack = 0;   // Σ(free − need) over the chosen GPUs
  bool placed = false;   // a placer chose GPUs for this node
};

// The verdicts of a block of nodes, where they live: contiguous, or one field of
// the runner's per-node results (so that filters write them in place, with no
// copy per node afterwards). S is Status or const Status.
template <class S>
class StatusView {
 public:
  StatusView(S* first, std::size_t size, std::size_t stride_bytes)
      : first_(first), size_(size), stride_(stride_bytes) {}
  StatusView(std::span<S> statuses)  // NOLINT: a contiguous array is a view too
      : StatusView(statuses.data(), statuses.size(), sizeof(Status)) {}
  template <class T, class = std::enable_if_t<std::is_const_v<S> && !std::is_const_v<T>>>
  StatusView(StatusView<T> other)  // NOLINT: writable converts to read-only
      : StatusView(other.first(), other.size(), other.stride()) {}
  template <class T, class = std::enable_if_t<std::is_const_v<S> && !std::is_const_v<T>>>
  StatusView(std::span<T> statuses)  // NOLINT
      : StatusView(statuses.data(), statuses.size(), sizeof(Status)) {}

  S& operator[](std::size_t i) const {
    using Byte = std::conditional_t<std::is_const_v<S>, const std::byte, std::byte>;
    return *reinterpret_cast<S*>(reinterpret_cast<Byte*>(first_) + i * stride_);
  }
  std::size_t size() const { return size_; }
  S* first() const { return first_; }
  std::size_t stride() const { return stride_; }

 private:
  S* first_;
  std::size_t size_;
  std::size_t stride_;
};
using StatusColumn = StatusView<Status>;
using ConstStatusColumn = StatusView<const Status>;

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
  // True when its verdict and score for a node depend on that node alone. The
  // runner then evaluates nodes in blocks that stay in cache; a plugin that
  // compares nodes with each other (normalises over the batch) says false and
  // gets every node in one batch.
  virtual bool PerNode() const { return true; }
};

class FilterPlugin : public virtual Plugin {
 public:
  // Checks every node of `nodes` whose status is still ok (or all of them when
  // `all` is set) and overwrites status[i] on rejection.
  virtual void FilterBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                           std::span<NodeScratch> scratch, StatusColumn status, bool all) const = 0;
  // True when FilterBatch tags what it rejects with Name() itself; otherwise the
  // runner does, in a pass of its own.
  virtual bool TagsRejections() const { return false; }
};

class ScorePlugin : public virtual Plugin {
 public:
  // Writes a score in [0, 100] for every node whose status is ok.
  virtual void ScoreBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                          std::span<const NodeScratch> scratch, ConstStatusColumn status,
                          std::span<double> scores) const = 0;
};

// Adapters: a plugin writes FilterOne / ScoreOne and gets the batch loop without
// a virtual call per node.
template <class Derived>
class FilterEachNode : public FilterPlugin {
 public:
  // flatten: FilterOne and what it calls are inlined into the loop (not what is
  // marked noinline): no call and no Status copy per node.
  [[gnu::flatten]] void FilterBatch(const CycleState& cycle,
                                    std::span<const NodeState* const> nodes,
                                    std::span<NodeScratch> scratch, StatusColumn status,
                                    bool all) const final {
    const auto& self = static_cast<const Derived&>(*this);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Status& verdict = status[i];
      if (verdict.ok()) {
        // Built in place (no Status moved per node): a fits verdict holds nothing
        // to keep, and what FilterOne returns is the node's verdict now.
        std::destroy_at(&verdict);
        try {
          ::new (static_cast<void*>(&verdict)) Status(self.FilterOne(cycle, *nodes[i], scratch[i]));
        } catch (...) {
          ::new (static_cast<void*>(&verdict)) Status();  // stays a valid object
          throw;
        }
        if (!verdict.ok()) verdict.Tag(self.Derived::Name());
      } else if (all) {
        self.FilterOne(cycle, *nodes[i], scratch[i]);  // its placement still counts
      }
    }
  }
  bool TagsRejections() const final { return true; }
};

template <class Derived>
class ScoreEachNode : public ScorePlugin {
 public:
  [[gnu::flatten]] void ScoreBatch(const CycleState& cycle, std::span<const NodeState* const> nodes,
                                   std::span<const NodeScratch> scratch, ConstStatusColumn status,
                                   std::span<double> scores) const final {
    const auto& self = static_cast<const Derived&>(*this);
    // A plugin may know that every node scores alike for this pod (gpufit for a
    // 1-GPU pod): then no node is read. Entries of rejected nodes are not read.
    if constexpr (requires { self.UniformScore(cycle); }) {
      if (const std::optional<double> same = self.UniformScore(cycle)) {
        std::fill(scores.begin(), scores.end(), *same);
        return;
      }
    }
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (status[i].ok()) scores[i] = self.ScoreOne(cycle, *nodes[i], scratch[i]);
  }
};

}  // namespace tidal
