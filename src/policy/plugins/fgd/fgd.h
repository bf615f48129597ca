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
  explicit Fgd(FgdArgs args) : args_(std::move(args)), models_(args_.tasks) {}
  std::string_view Name() const override { return "fgd"; }
  // Rejects a node where the pod's GPUs do not fit; for a sharing pod, chooses the
  // GPU that raises fragmentation least (first on ties).
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // The score of placing the pod on `gpus` of the node.
  double ScoreFor(const PodDemand& pod, const NodeState& node, GpuSet gpus, double before) const;
  const FgdArgs& args() const { return args_; }

 private:
  // The node's fragmentation for the args' tasks (NodeFragmentation, through models_).
  double Fragmentation(const NodeState& node) const;
  FgdArgs args_;
  TaskModelTable models_;  // built from args_.tasks: declared after it
};

std::unique_ptr<Plugin> NewFgd(const YAML::Node& args, const std::string& path,
                               ConfigErrors& errors);

}  // namespace tidal
