#include "policy/plugins/loadaware/loadaware.h"

#include <cmath>

#include <fmt/format.h>

namespace tidal {
namespace {

std::string Percent(double fraction) { return fmt::format("{:.0f}%", std::floor(fraction * 100 + 0.5)); }

}  // namespace

Status LoadAware::FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch&) const {
  // Unknown is not idle: without the node's own series there is nothing to reject on.
  if (!node.metrics_known) return Status::Fits();
  const EffectiveThresholds& t = cycle.thresholds;
  if (node.load.gpu_memory > t.gpu_memory.reject)
    return Status::Unfit(fmt::format("GPU memory {} over reject threshold {}",
                                     Percent(node.load.gpu_memory), Percent(t.gpu_memory.reject)));
  if (cycle.uses_nvlink && node.load.nvlink > t.nvlink.reject)
    return Status::Unfit(fmt::format("NVLink load {:.2f} over reject threshold {:.2f}",
                                     node.load.nvlink, t.nvlink.reject));
  if (node.load.await_ms > t.await_ms.reject)
    return Status::Unfit(fmt::format("storage await {:.1f} ms over reject threshold {:.1f} ms",
                                     node.load.await_ms, t.await_ms.reject));
  return Status::Fits();
}

double LoadAware::Penalty(const CycleState& cycle, const NodeState& node) const {
  const EffectiveThresholds& t = cycle.thresholds;
  const double p_mem = BandPosition(node.load.gpu_memory, t.gpu_memory);
  // NVLink load only costs pods that use NVLink, as in the filter.
  const double p_nvl = cycle.uses_nvlink ? BandPosition(node.load.nvlink, t.nvlink) : 0.0;
  const double p_io = BandPosition(node.load.await_ms, t.await_ms);
  return args_.weight_gpu_memory * p_mem + args_.weight_nvlink * p_nvl + args_.weight_io * p_io;
}

double LoadAware::ScoreOne(const CycleState& cycle, const NodeState& node,
                           const NodeScratch&) const {
  if (!node.metrics_known) return args_.unknown_node_score;
  return 100.0 * (1.0 - Penalty(cycle, node));
}

std::unique_ptr<Plugin> NewLoadAware(const YAML::Node& args, const std::string& path,
                                     ConfigErrors& errors) {
  ConfigErrors local;
  LoadAwareArgs a = LoadAwareArgs::Parse(args, path, local);
  a.Validate(path, local);
  errors.Merge(local);
  if (!local.empty()) return nullptr;
  return std::make_unique<LoadAware>(a);
}

}  // namespace tidal
