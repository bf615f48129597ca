#pragma once
// How the runner calls plugins: in batches of nodes, with the verdicts written in
// place in its per-node results. A plugin writes FilterOne / ScoreOne (plugin.h)
// and derives from FilterEachNode / ScoreEachNode below, which turn them into the
// batch calls with no virtual call and no Status copy per node. Included by
// plugin.h; the runner (runner.cc) is its other reader.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <type_traits>

#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/policy/plugin.h"

namespace tidal {

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
  // True when the plugin has nothing to say about this pod on any node (as
  // kube-scheduler's PreScore Skip): the runner leaves it out of the pod's
  // weighted mean. A uniform score (UniformScore) still counts in the mean.
  virtual bool SkipsScore(const CycleState& /*cycle*/) const { return false; }
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
