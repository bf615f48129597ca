#pragma once
// gpupacking: the FGD paper's GPU Packing baseline: prefer GPUs already shared,
// then free GPUs on a node already in use, then an idle node. Scores 50–100 for a
// pod that fits on shared GPUs (the less free share left, the higher), 33–50 when
// it needs whole free GPUs of a used node, 0–33 on an idle node. No args.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class GpuPacking final : public ScoreEachNode<GpuPacking> {
 public:
  std::string_view Name() const override { return "gpupacking"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
};

std::unique_ptr<Plugin> NewGpuPacking(const YAML::Node& args, const std::string& path,
                                      ConfigErrors& errors);

}  // namespace tidal
