#include "policy/plugins/balance/balance.h"

#include <algorithm>

#include "tidal/policy/yaml_util.h"

namespace tidal {

double Balance::ProjectedMemory(const CycleState& cycle, const NodeState& node) {
  const Bytes total = node.gpu_memory_total;
  Bytes used = node.gpu_memory_used;
  if (total <= 0) return node.load.gpu_memory;
  used += static_cast<Bytes>(cycle.pod->gpu_count) * cycle.memory_need_per_gpu;
  return std::min(1.0, static_cast<double>(used) / static_cast<double>(total));
}

double Balance::ProjectedLoad(const CycleState& cycle, const NodeState& node) const {
  const double mem = ProjectedMemory(cycle, node);
  const double nvl = std::clamp(node.load.nvlink, 0.0, 1.0);
  const double io =
      cycle.thresholds.await_ms.reject > 0
          ? std::clamp(node.load.await_ms / cycle.thresholds.await_ms.reject, 0.0, 1.0)
          : 0.0;
  return args_.weights.Combine(mem, nvl, io);
}

double Balance::ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch&) const {
  if (!node.metrics_known) return 50;  // no load to rank by: the middle
  const double load = ProjectedLoad(cycle, node);
  if (args_.mode == BalanceMode::kSpread) return 100.0 * (1.0 - load);
  // pack: fuller is better while the node stays under the GPU memory warning level.
  if (ProjectedMemory(cycle, node) > cycle.thresholds.gpu_memory.warn) return 0;
  return 100.0 * load;
}

std::unique_ptr<Plugin> NewBalance(const YAML::Node& args, const std::string& path,
                                   ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<Balance, BalanceArgs>(args, path, errors);
}

}  // namespace tidal
