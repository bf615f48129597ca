#pragma once
// bestfit: bin-packing on requested GPUs (kube-scheduler's MostAllocated on
// nvidia.com/gpu): the fullest node that still fits wins. A request-based
// baseline; it sees no real memory. No args.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class BestFit final : public ScoreEachNode<BestFit> {
 public:
  std::string_view Name() const override { return "bestfit"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
};

std::unique_ptr<Plugin> NewBestFit(const YAML::Node& args, const std::string& path,
                                   ConfigErrors& errors);

}  // namespace tidal
