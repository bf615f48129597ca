#pragma once
// bestfitmilli: the FGD paper's BestFit baseline: the node with the least CPU and
// GPU left after the pod, weighted ½ each and divided by the largest node spec
// (128 CPUs, 8 GPUs): score trunc(100 × (1 − leftover)). Unlike `bestfit` (which
// counts whole advertised GPUs), it sees milli-GPU shares and CPU. No args.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class BestFitMilli final : public ScoreEachNode<BestFitMilli> {
 public:
  std::string_view Name() const override { return "bestfitmilli"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
};

std::unique_ptr<Plugin> NewBestFitMilli(const YAML::Node& args, const std::string& path,
                                        ConfigErrors& errors);

}  // namespace tidal
