#include "policy/plugins/bestfit/bestfit.h"

#include <algorithm>

namespace tidal {

double BestFit::ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch&) const {
  const int alloc = node.AllocatableGpus();
  if (alloc <= 0) return 0;
  const int requested = std::min(alloc, node.gpus_requested + cycle.pod->gpu_count);
  return static_cast<double>(static_cast<std::int64_t>(requested) * 100 / alloc);
}

std::unique_ptr<Plugin> NewBestFit(const YAML::Node& args, const std::string& path,
                                   ConfigErrors& errors) {
  if (args && !args.IsNull() && !(args.IsMap() && args.size() == 0)) {
    errors.Add(path, "bestfit takes no args");
    return nullptr;
  }
  return std::make_unique<BestFit>();
}

}  // namespace tidal
