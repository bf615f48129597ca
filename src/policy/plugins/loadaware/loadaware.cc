#include "policy/plugins/loadaware/loadaware.h"

#include <algorithm>
#include <string>

#include "tidal/core/fast_text.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {
namespace {

// The reasons are deferred (Status::Deferred): formatted only if read, on the
// stack (the extender formats one for every node rejected). Same text as fmt
// "GPU memory {pct} over reject threshold {pct}" etc.
void GpuMemoryReason(const Status::Arg* a, std::string* out) {
  StackMessage()
      .Text("GPU memory ")
      .Percent(a[0].d)
      .Text(" over reject threshold ")
      .Percent(a[1].d)
      .AppendTo(out);
}
void NvlinkReason(const Status::Arg* a, std::string* out) {
  StackMessage()
      .Text("NVLink load ")
      .Fixed(a[0].d, 2)
      .Text(" over reject threshold ")
      .Fixed(a[1].d, 2)
      .AppendTo(out);
}
void AwaitReason(const Status::Arg* a, std::string* out) {
  StackMessage()
      .Text("storage await ")
      .Fixed(a[0].d, 1)
      .Text(" ms over reject threshold ")
      .Fixed(a[1].d, 1)
      .Text(" ms")
      .AppendTo(out);
}

}  // namespace

Status LoadAware::FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch&) const {
  // Unknown is not idle: without the node's own series there is nothing to reject on.
  if (!node.metrics_known) return Status::Fits();
  const EffectiveThresholds& t = cycle.thresholds;
  if (node.load.gpu_memory > t.gpu_memory.reject)
    return Status::Deferred(
        Code::kUnfit, GpuMemoryReason,
        {Status::Real(node.load.gpu_memory), Status::Real(t.gpu_memory.reject)});
  if (cycle.uses_nvlink && node.load.nvlink > t.nvlink.reject)
    return Status::Deferred(Code::kUnfit, NvlinkReason,
                            {Status::Real(node.load.nvlink), Status::Real(t.nvlink.reject)});
  if (node.load.await_ms > t.await_ms.reject)
    return Status::Deferred(Code::kUnfit, AwaitReason,
                            {Status::Real(node.load.await_ms), Status::Real(t.await_ms.reject)});
  return Status::Fits();
}

double LoadAware::Penalty(const CycleState& cycle, const NodeState& node) const {
  const EffectiveThresholds& t = cycle.thresholds;
  // The score reads the forecast when there is one; the filter above never does.
  LoadVector load = node.load;
  if (node.has_load_trend) {
    load.gpu_memory = std::max(0.0, load.gpu_memory + node.load_trend.gpu_memory);
    load.nvlink = std::max(0.0, load.nvlink + node.load_trend.nvlink);
    load.await_ms = std::max(0.0, load.await_ms + node.load_trend.await_ms);
  }
  const double p_mem = BandPosition(load.gpu_memory, t.gpu_memory);
  // NVLink load only costs pods that use NVLink, as in the filter.
  const double p_nvl = cycle.uses_nvlink ? BandPosition(load.nvlink, t.nvlink) : 0.0;
  const double p_io = BandPosition(load.await_ms, t.await_ms);
  return args_.weights.Combine(p_mem, p_nvl, p_io);
}

double LoadAware::ScoreOne(const CycleState& cycle, const NodeState& node,
                           const NodeScratch&) const {
  if (!node.metrics_known) return args_.unknown_node_score;
  return 100.0 * (1.0 - Penalty(cycle, node));
}

std::unique_ptr<Plugin> NewLoadAware(const YAML::Node& args, const std::string& path,
                                     ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<LoadAware, LoadAwareArgs>(args, path, errors);
}

}  // namespace tidal
