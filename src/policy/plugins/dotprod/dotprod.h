#pragma once
// dotprod: the FGD paper's DotProd baseline (Tetris-style alignment). The node's
// free (CPU, GPU) and the pod's request, each divided by the largest node spec
// (128 CPUs, 8 GPUs), are multiplied; the smaller the dot product, the higher the
// score: 100 × (1 − dot / 2), truncated to an integer as the paper's simulator does.
// No args.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class DotProd final : public ScoreEachNode<DotProd> {
 public:
  static constexpr double kMaxCpuMilli = 128000;
  static constexpr double kMaxGpuMilli = 8000;
  std::string_view Name() const override { return "dotprod"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
};

std::unique_ptr<Plugin> NewDotProd(const YAML::Node& args, const std::string& path,
                                   ConfigErrors& errors);

}  // namespace tidal
