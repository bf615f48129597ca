#include "policy/plugins/gpupacking/gpupacking.h"

#include <algorithm>
#include <numeric>

#include "tidal/policy/milli_gpu.h"

namespace tidal {

double GpuPacking::ScoreOne(const CycleState& cycle, const NodeState& node,
                            const NodeScratch&) const {
  const PodDemand& pod = *cycle.pod;
  if (pod.gpu_count <= 0 || pod.gpu_milli <= 0) return 0;
  const int n = static_cast<int>(node.gpus.size());
  const int fully_free = FullyFreeGpus(node);
  if (fully_free == n) return std::max(33 - fully_free, fully_free);  // an idle node
  // The GPUs it would take, least free share first (stable on index).
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return node.gpus[a].milli_free < node.gpus[b].milli_free; });
  int need = pod.gpu_count, whole_used = 0;
  std::int64_t shared_free_pct = 0;
  for (int g : order) {
    if (need == 0) break;
    const int f = node.gpus[g].milli_free;
    if (f < pod.gpu_milli) continue;
    --need;
    if (f == kMilliPerGpu) ++whole_used;
    shared_free_pct += f * 100 / kMilliPerGpu;
  }
  if (need > 0) return 0;
  if (whole_used > 0) return std::max(50 - whole_used, 33);
  return static_cast<double>(std::max<std::int64_t>(100 - shared_free_pct / 10, 50));
}

std::unique_ptr<Plugin> NewGpuPacking(const YAML::Node& args, const std::string& path,
                                      ConfigErrors& errors) {
  if (args && !args.IsNull() && !(args.IsMap() && args.size() == 0)) {
    errors.Add(path, "gpupacking takes no args");
    return nullptr;
  }
  return std::make_unique<GpuPacking>();
}

}  // namespace tidal
