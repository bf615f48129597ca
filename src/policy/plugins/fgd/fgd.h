#pragma once
// fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23). A node's
// fragmentation F_n(M) for a target workload M (the `tasks` args) is FGD's
// measure, NodeFragmentation in tidal/policy/fragmentation.h.
// FGD places a pod where F grows least: score = trunc(100 · sigmoid((F_before −
// F_after) / 1000)); a sharing pod gets the GPU that gives the best score.
#include <memory>

#include "policy/plugins/fgd/fgd_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class Fgd final : public FilterEachNode<Fgd>, public ScoreEachNode<Fgd> {
 public:
  explicit Fgd(FgdArgs args);
  std::string_view Name() const override { return "fgd"; }
  // Rejects a node where the pod's GPUs do not fit; for a sharing pod, chooses the
  // GPU that raises fragmentation least (first on ties).
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // Nothing to say: with a target workload of one whole GPU and no CPU or model
  // (the default), a pod that shares no GPU changes no node's fragmentation, so
  // every node would score 50; left out of the weighted mean instead of
  // pulling every node's score towards 50 (which moves the extender's 0–10
  // priorities). Not with tieBreak: pack, whose term differs per node. Also
  // skipped while Idle.
  bool SkipsScore(const CycleState& cycle) const override;
  // The score of placing the pod on `gpus` of the node, for `workload`.
  double ScoreFor(const PodDemand& pod, const NodeState& node, GpuSet gpus, double before,
                  const TargetWorkload& workload) const;
  const FgdArgs& args() const { return args_; }
  // With a fill plan, a sharing pod's `score` on a GPU with `gpu_free` milli free
  // in one of three bands: the plan places its share at that GPU's fill level, the
  // GPU is empty, or neither (`score` itself without a plan).
  static double FollowingPlan(const FillPlan& plan, const PodDemand& pod, int gpu_free,
                              double score);

 private:
  // onlyWithTidalDevicePlugin and no GPU choice seen carried out yet: every node
  // passes, the pod is skipped.
  bool Idle(const CycleState& cycle) const {
    return args_.only_with_tidal_device_plugin && !cycle.gpu_choice_carried_out;
  }
  // The cycle's learned workload (tasks: learned, once something is learned), or the args'.
  const TargetWorkload& WorkloadOf(const CycleState& cycle) const {
    return args_.learned && cycle.workload && !cycle.workload->tasks.empty() ? *cycle.workload
                                                                             : configured_;
  }
  // The node's fragmentation for `workload` (NodeFragmentation, through its model table).
  static double Fragmentation(const NodeState& node, const TargetWorkload& workload);
  // The fill plan for `node`'s GPU model in this cycle: of the learned workload's
  // plan (fillPlan: workload with tasks: learned, once one is planned), or plan_.
  const FillPlan& PlanOf(const CycleState& cycle, const NodeState& node) const;
  FgdArgs args_;
  TargetWorkload configured_;  // built from args_.tasks: declared after it
  FillPlan plan_;              // args_.fill_plan, or PlanFills(args_.tasks) (fillPlan: workload)
};

std::unique_ptr<Plugin> NewFgd(const YAML::Node& args, const std::string& path,
                               ConfigErrors& errors);

}  // namespace tidal
