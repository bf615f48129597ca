#pragma once
// The policy plugin interface (docs/design.md#plugins). A plugin is a small pure
// function of (pod, node snapshot, args); the Runner owns timing, range checks,
// weights and the loop over nodes. A plugin author writes one class:
//
//   // Rejects nodes with fewer free GPUs than the pod asks for.
//   class FreeGpus final : public FilterEachNode<FreeGpus> {
//    public:
//     std::string_view Name() const override { return "freegpus"; }
//     Status FilterOne(const CycleState& cycle, const NodeState& node,
//                      NodeScratch& scratch) const {
//       const int free = node.allocatable_gpus - node.gpus_requested;
//       if (free >= cycle.pod->gpu_count) return Status::Fits();
//       return Status::Unfit("free GPUs " + std::to_string(free) + " below the pod's " +
//                            std::to_string(cycle.pod->gpu_count));
//     }
//   };
//
// and, for a score, derives from ScoreEachNode<Self> with
//   double ScoreOne(const CycleState&, const NodeState&, const NodeScratch&) const;
// returning [0, 100] (optionally `std::optional<double> UniformScore(const
// CycleState&) const` when every node scores alike for the pod, or `bool
// SkipsScore(const CycleState&) const override` when the plugin has nothing to
// say about the pod and must not count in its mean). Then one line in
// src/policy/registry.cc (plugin_example_test.cc runs this example). How the
// runner calls plugins in batches is in plugin_batch.h; a plugin need not read it.
#include <memory>
#include <string_view>

#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/policy/thresholds.h"

namespace tidal {

struct TargetWorkload;  // tidal/policy/fragmentation.h

// Per-pod data computed once per scheduling cycle (the PreFilter step).
struct CycleState {
  const PodDemand* pod = nullptr;
  EffectiveThresholds thresholds;
  Bytes memory_need_per_gpu = 0;  // declared or estimated
  bool uses_nvlink = false;       // required or auto-detected: NVLink load counts for it
  bool nvlink_required = false;   // explicitly required: multi-GPU sets must be linked
  int nvlink_slots_per_gpu = 2;
  // The GPU workload learned from the pods seen so far (WorkloadLearner), for the
  // fgd plugin's `tasks: learned`; null when nothing learns or nothing is learned yet.
  std::shared_ptr<const TargetWorkload> workload;
  // The nodes give a pod the GPUs the scheduler chose
  // (WorkloadLearner::GpuChoiceCarriedOut): where they do not, a GPU-level
  // packing decision is not carried out (fgd's onlyWithTidalDevicePlugin).
  bool gpu_choice_carried_out = false;
};

// Per-node data produced by filters and read by scorers (the chosen GPUs).
struct NodeScratch {
  GpuSet gpus;
  int nvlink_links = 0;  // links inside the chosen set, summed over pairs
  Bytes fit_slack = 0;   // Σ(free − need) over the chosen GPUs
  bool placed = false;   // a placer chose GPUs for this node
  // A score the plugin `scored_by` computed in its filter for the GPUs in
  // `scored_gpus`, for its own score to reuse while `gpus` still holds them (fgd
  // scores each GPU a sharing pod could take in its filter).
  const void* scored_by = nullptr;
  GpuSet scored_gpus;
  double placer_score = 0;
};

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

}  // namespace tidal

// FilterEachNode / ScoreEachNode, and the batch interfaces the runner calls.
#include "tidal/policy/plugin_batch.h"  // IWYU pragma: export
