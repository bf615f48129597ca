#include "policy/plugins/gpuclustering/gpuclustering.h"

#include "tidal/policy/milli_gpu.h"

namespace tidal {

double GpuClustering::ScoreOne(const CycleState& cycle, const NodeState& node,
                               const NodeScratch&) const {
  const std::uint64_t kind = GpuPodKind(*cycle.pod);
  if (kind == 0) return 0;
  // Integer arithmetic as in the paper's simulator: 25 × used share of 8 GPUs.
  constexpr std::int64_t kMaxSpec = 8000;
  const std::int64_t fill = 25 * (kMaxSpec - MilliFreeTotal(node)) / kMaxSpec;
  std::int64_t band = 0;
  if (node.gpu_pod_kinds & kind)
    band = node.gpu_pod_kinds == kind ? 75 : 50;
  else if (node.gpu_pod_kinds == 0)
    band = 25;
  return static_cast<double>(fill + band);
}

std::unique_ptr<Plugin> NewGpuClustering(const YAML::Node& args, const std::string& path,
                                         ConfigErrors& errors) {
  if (args && !args.IsNull() && !(args.IsMap() && args.size() == 0)) {
    errors.Add(path, "gpuclustering takes no args");
    return nullptr;
  }
  return std::make_unique<GpuClustering>();
}

}  // namespace tidal
