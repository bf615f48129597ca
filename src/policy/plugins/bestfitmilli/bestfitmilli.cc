#include "policy/plugins/bestfitmilli/bestfitmilli.h"

#include <algorithm>
#include <cmath>

#include "tidal/policy/milli_gpu.h"

namespace tidal {

double BestFitMilli::ScoreOne(const CycleState& cycle, const NodeState& node,
                              const NodeScratch&) const {
  const PodDemand& pod = *cycle.pod;
  const double cpu = static_cast<double>(CpuLeft(node) - pod.cpu_milli) / 128000.0;
  const double gpu = static_cast<double>(MilliFreeTotal(node) - PodMilliTotal(pod)) / 8000.0;
  if (cpu < 0 || gpu < 0) return 0;  // does not fit; the filter rejects it anyway
  return std::clamp(std::trunc(100.0 * (1.0 - 0.5 * cpu - 0.5 * gpu)), 0.0, 100.0);
}

std::unique_ptr<Plugin> NewBestFitMilli(const YAML::Node& args, const std::string& path,
                                        ConfigErrors& errors) {
  if (args && !args.IsNull() && !(args.IsMap() && args.size() == 0)) {
    errors.Add(path, "bestfitmilli takes no args");
    return nullptr;
  }
  return std::make_unique<BestFitMilli>();
}

}  // namespace tidal
