#include "tidal/policy/yaml_util.h"
#include "policy/plugins/loadaware/loadaware.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

namespace tidal {
namespace {

// The reject messages are built on the hot path (a large share of the nodes of a
// busy cluster is rejected), so they are appended with std::to_chars instead of
// fmt::format: both print the exactly rounded value, so the text is the same.
void AppendFixed(std::string& out, double x, int precision) {
  if (!std::isfinite(x)) {
    out += fmt::format("{:.{}f}", x, precision);  // "inf", "nan": keep fmt's spelling
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, precision);
  if (r.ec == std::errc()) {
    out.append(buf, r.ptr);
  } else {
    out += fmt::format("{:.{}f}", x, precision);  // longer than 64 characters
  }
}

// "{:.0f}%" of the rounded percentage.
void AppendPercent(std::string& out, double fraction) {
  AppendFixed(out, std::floor(fraction * 100 + 0.5), 0);
  out += '%';
}

// prefix + a + middle + b + suffix, with one allocation.
std::string Message(std::string_view prefix, double a, std::string_view middle, double b,
                    std::string_view suffix, int precision, bool percent) {
  std::string out;
  out.reserve(prefix.size() + middle.size() + suffix.size() + 32);
  out += prefix;
  percent ? AppendPercent(out, a) : AppendFixed(out, a, precision);
  out += middle;
  percent ? AppendPercent(out, b) : AppendFixed(out, b, precision);
  out += suffix;
  return out;
}

}  // namespace

Status LoadAware::FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch&) const {
  // Unknown is not idle: without the node's own series there is nothing to reject on.
  if (!node.metrics_known) return Status::Fits();
  const EffectiveThresholds& t = cycle.thresholds;
  // Same text as fmt "GPU memory {pct} over reject threshold {pct}" etc.
  if (node.load.gpu_memory > t.gpu_memory.reject)
    return Status::Unfit(Message("GPU memory ", node.load.gpu_memory, " over reject threshold ",
                                 t.gpu_memory.reject, "", 0, true));
  if (cycle.uses_nvlink && node.load.nvlink > t.nvlink.reject)
    return Status::Unfit(Message("NVLink load ", node.load.nvlink, " over reject threshold ",
                                 t.nvlink.reject, "", 2, false));
  if (node.load.await_ms > t.await_ms.reject)
    return Status::Unfit(Message("storage await ", node.load.await_ms, " ms over reject threshold ",
                                 t.await_ms.reject, " ms", 1, false));
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
