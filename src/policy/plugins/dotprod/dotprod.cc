#include "policy/plugins/dotprod/dotprod.h"

#include <cmath>

#include "tidal/policy/milli_gpu.h"

namespace tidal {

double DotProd::ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch&) const {
  const PodDemand& pod = *cycle.pod;
  if (CpuLeft(node) < pod.cpu_milli) return 0;
  const double cpu = (static_cast<double>(CpuLeft(node)) / kMaxCpuMilli) *
                     (static_cast<double>(pod.cpu_milli) / kMaxCpuMilli);
  const double gpu = (static_cast<double>(MilliFreeTotal(node)) / kMaxGpuMilli) *
                     (static_cast<double>(PodMilliTotal(pod)) / kMaxGpuMilli);
  return std::trunc(100.0 * (1.0 - (cpu + gpu) / 2.0));
}

std::unique_ptr<Plugin> NewDotProd(const YAML::Node& args, const std::string& path,
                                   ConfigErrors& errors) {
  if (args && !args.IsNull() && !(args.IsMap() && args.size() == 0)) {
    errors.Add(path, "dotprod takes no args");
    return nullptr;
  }
  return std::make_unique<DotProd>();
}

}  // namespace tidal
