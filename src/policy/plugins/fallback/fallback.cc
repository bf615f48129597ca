#include "policy/plugins/fallback/fallback.h"

#include <algorithm>

#include "tidal/core/text.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

int Fallback::RemainingGpus(const NodeState& node) {
  return std::max(0, node.AllocatableGpus() - node.gpus_requested);
}

bool Fallback::InGoldenPool(const NodeState& node) const {
  for (const auto& [k, v] : args_.golden_pool) {
    const auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  return true;
}

void Fallback::FilterBatch(const CycleState&, std::span<const NodeState* const> nodes,
                           std::span<NodeScratch>, StatusColumn status, bool all) const {
  if (args_.stage < 2) return;
  std::string selector;
  for (const auto& [k, v] : args_.golden_pool)
    selector += (selector.empty() ? "" : ",") + k + "=" + v;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if ((!all && !status[i].ok()) || InGoldenPool(*nodes[i])) continue;
    if (status[i].ok())
      status[i] = Status::Unfit("metrics unavailable (fallback stage 2): only the golden pool " +
                                selector + " is used");
  }
}

void Fallback::ScoreBatch(const CycleState&, std::span<const NodeState* const> nodes,
                          std::span<const NodeScratch>, ConstStatusColumn status,
                          std::span<double> scores) const {
  int most = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (status[i].ok()) most = std::max(most, RemainingGpus(*nodes[i]));
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (status[i].ok()) scores[i] = most > 0 ? 100.0 * RemainingGpus(*nodes[i]) / most : 0;
}

std::unique_ptr<Plugin> NewFallback(const YAML::Node& args, const std::string& path,
                                    ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<Fallback, FallbackArgs>(args, path, errors);
}

}  // namespace tidal
