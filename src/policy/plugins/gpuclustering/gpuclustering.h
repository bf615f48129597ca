#pragma once
// gpuclustering: the FGD paper's GPU Clustering baseline: put a GPU pod where pods
// of the same GPU kind (sharing, 1, 2, 4 or 8 whole GPUs) already run. Bands: only
// that kind 75–100, that kind among others 50–75, an idle node 25–50, other kinds
// 0–25; inside a band, fuller nodes score higher. CPU-only pods score 0. No args.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class GpuClustering final : public ScoreEachNode<GpuClustering> {
 public:
  std::string_view Name() const override { return "gpuclustering"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
};

std::unique_ptr<Plugin> NewGpuClustering(const YAML::Node& args, const std::string& path,
                                         ConfigErrors& errors);

}  // namespace tidal
