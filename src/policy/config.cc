#include "tidal/policy/config.h"

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "tidal/core/file.h"
#include "tidal/core/status.h"
#include "tidal/core/text.h"
#include "tidal/kubetypes/quantity.h"
#include "tidal/policy/registry.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

std::string ConfigErrors::Joined() const {
  std::string out;
  for (const auto& e : items_) out += e + "\n";
  return out;
}

const TenantConfig* PolicyConfig::TenantFor(const std::string& ns) const {
  for (const auto& t : tenants)
    if (t.namespace_name == ns) return &t;
  return nullptr;
}

std::optional<TimeMs> ParseDurationMs(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return std::nullopt;
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = text.substr(i);
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "ms")
    scale = 1;
  else if (unit == "m")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else
    return std::nullopt;
  if (!std::isfinite(value) || value * scale > 1e15) return std::nullopt;
  return static_cast<TimeMs>(std::llround(value * scale));
}

namespace {

// A threshold computed from two config fractions (reject minus the margin), for
// a message: the subtraction's last bits are rounding error (0.85 - 0.03 is
// 0.8200000000000001); nine significant digits, 1e-9 relative, keep every
// difference a user could have typed.
std::string FmtDerived(double v) { return Fmt(RoundSignificant(v, 9)); }

void ReadPair(const YAML::Node& node, const std::string& path, ThresholdPair* pair,
              ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"warn", "reject"}, errors);
  ReadDouble(node, path, "warn", &pair->warn, errors);
  ReadDouble(node, path, "reject", &pair->reject, errors);
}

void ReadThresholds(const YAML::Node& node, const std::string& path, Thresholds* t,
                    ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"gpuMemory", "nvlink", "storageAwaitMs"}, errors);
  ReadPair(node["gpuMemory"], Join(path, "gpuMemory"), &t->gpu_memory, errors);
  ReadPair(node["nvlink"], Join(path, "nvlink"), &t->nvlink, errors);
  ReadPair(node["storageAwaitMs"], Join(path, "storageAwaitMs"), &t->await_ms, errors);
}

void CheckFraction(double v, const std::string& path, ConfigErrors& errors) {
  if (!(v >= 0 && v <= 1)) errors.Add(path, Fmt(v) + " is outside [0, 1]");
}

void ValidateThresholds(const Thresholds& t, const std::string& path, ConfigErrors& errors) {
  const std::string mem = Join(path, "gpuMemory"), nvl = Join(path, "nvlink"),
                    io = Join(path, "storageAwaitMs");
  CheckFraction(t.gpu_memory.warn, mem + ".warn", errors);
  CheckFraction(t.gpu_memory.reject, mem + ".reject", errors);
  CheckFraction(t.nvlink.warn, nvl + ".warn", errors);
  CheckFraction(t.nvlink.reject, nvl + ".reject", errors);
  if (!(t.await_ms.warn >= 0)) errors.Add(io + ".warn", Fmt(t.await_ms.warn) + " must be >= 0");
  if (!(t.await_ms.reject > 0)) errors.Add(io + ".reject", Fmt(t.await_ms.reject) + " must be > 0");
  auto order = [&](const ThresholdPair& p, const std::string& at) {
    if (p.warn >= p.reject)
      errors.Add(at + ".warn", Fmt(p.warn) + " must be below reject " + Fmt(p.reject));
  };
  order(t.gpu_memory, mem);
  order(t.nvlink, nvl);
  order(t.await_ms, io);
}

void ReadNvlink(const YAML::Node& node, const std::string& path, NvlinkDetection* d,
                ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"slotsPerGpu", "autoDetect"}, errors);
  ReadInt(node, path, "slotsPerGpu", &d->slots_per_gpu, errors);
  if (d->slots_per_gpu < 1) errors.Add(Join(path, "slotsPerGpu"), "must be >= 1");
  const std::string ap = Join(path, "autoDetect");
  const YAML::Node a = node["autoDetect"];
  if (!IsMap(a, ap, errors)) return;
  CheckKeys(a, ap, {"imagePatterns", "minGpus"}, errors);
  ReadInt(a, ap, "minGpus", &d->min_gpus, errors);
  if (d->min_gpus < 2) errors.Add(Join(ap, "minGpus"), "must be >= 2 (one GPU never uses NVLink)");
  if (const YAML::Node p = a["imagePatterns"]; p && !p.IsNull()) {
    if (!p.IsSequence()) {
      errors.Add(Join(ap, "imagePatterns"), "expected a list of strings");
    } else {
      d->image_patterns.clear();
      for (std::size_t i = 0; i < p.size(); ++i) {
        const std::string ip = Join(ap, "imagePatterns") + "[" + std::to_string(i) + "]";
        if (!p[i].IsScalar() || p[i].Scalar().empty())
          errors.Add(ip, "expected a non-empty string");
        else if (CheckUtf8(p[i].Scalar(), ip, errors))
          d->image_patterns.push_back(p[i].Scalar());
      }
    }
  }
}

void ReadMemoryEstimate(const YAML::Node& node, const std::string& path, MemoryEstimate* m,
                        ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"cudaContext", "parameterFactor", "default", "byLoadType"}, errors);
  ReadBytes(node, path, "cudaContext", &m->cuda_context, errors);
  ReadBytes(node, path, "default", &m->fallback, errors);
  ReadDouble(node, path, "parameterFactor", &m->parameter_factor, errors);
  if (!(m->parameter_factor >= 1 && m->parameter_factor <= 10))
    errors.Add(Join(path, "parameterFactor"), Fmt(m->parameter_factor) + " is outside [1, 10]");
  const std::string bp = Join(path, "byLoadType");
  const YAML::Node b = node["byLoadType"];
  if (!IsMap(b, bp, errors)) return;
  for (const auto& kv : b) {
    const std::string key = kv.first.Scalar();
    auto type = ParseLoadType(key);
    if (!type || *type == LoadType::kUnspecified) {
      errors.Add(Join(bp, key),
                 "unknown load type (expected GPU_HEAVY, IO_HEAVY, NVLINK_HEAVY or INFERENCE)");
      continue;
    }
    Bytes v = 0;
    ReadBytes(b, bp, key.c_str(), &v, errors);
    m->by_load_type[*type] = v;
  }
}

void ReadFallback(const YAML::Node& node, const std::string& path, FallbackConfig* f,
                  ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"stage2After", "goldenPool"}, errors);
  ReadDuration(node, path, "stage2After", &f->stage2_after_ms, errors);
  const std::string gp = Join(path, "goldenPool");
  const YAML::Node g = node["goldenPool"];
  if (!IsMap(g, gp, errors)) return;
  f->golden_pool.clear();
  ReadLabels(g, gp, &f->golden_pool, errors);
  if (f->golden_pool.empty()) errors.Add(gp, "must select at least one label");
}

void ReadReservations(const YAML::Node& node, const std::string& path, ReservationConfig* r,
                      ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"enabled", "ttl", "visibleAfter", "claims"}, errors);
  ReadBool(node, path, "enabled", &r->enabled, errors);
  ReadDuration(node, path, "ttl", &r->ttl_ms, errors);
  ReadDuration(node, path, "visibleAfter", &r->visible_after_ms, errors);
  ReadBool(node, path, "claims", &r->claims, errors);
  if (r->ttl_ms < 1000) errors.Add(Join(path, "ttl"), "must be at least 1s");
  if (r->visible_after_ms > r->ttl_ms)
    errors.Add(Join(path, "visibleAfter"), "must not be longer than the ttl");
}

void ReadForecast(const YAML::Node& node, const std::string& path, ForecastConfig* f,
                  ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"enabled", "horizon", "alpha", "beta", "maxGap"}, errors);
  ReadBool(node, path, "enabled", &f->enabled, errors);
  ReadDuration(node, path, "horizon", &f->horizon_ms, errors);
  ReadDouble(node, path, "alpha", &f->alpha, errors);
  ReadDouble(node, path, "beta", &f->beta, errors);
  ReadDuration(node, path, "maxGap", &f->max_gap_ms, errors);
  if (f->horizon_ms > 600'000) errors.Add(Join(path, "horizon"), "must be at most 10m");
  if (!(f->alpha > 0 && f->alpha <= 1))
    errors.Add(Join(path, "alpha"), Fmt(f->alpha) + " is outside (0, 1]");
  if (!(f->beta >= 0 && f->beta <= 1))
    errors.Add(Join(path, "beta"), Fmt(f->beta) + " is outside [0, 1]");
  if (f->max_gap_ms < 1000) errors.Add(Join(path, "maxGap"), "must be at least 1s");
}

void ReadMemoryLearning(const YAML::Node& node, const std::string& path, MemoryLearningConfig* m,
                        ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path, {"enabled", "quantile", "minSamples", "window", "headroom", "file"},
            errors);
  ReadBool(node, path, "enabled", &m->enabled, errors);
  ReadDouble(node, path, "quantile", &m->quantile, errors);
  ReadInt(node, path, "minSamples", &m->min_samples, errors);
  ReadInt(node, path, "window", &m->window, errors);
  ReadDouble(node, path, "headroom", &m->headroom, errors);
  ReadString(node, path, "file", &m->file, errors);
  if (!(m->quantile >= 0.5 && m->quantile <= 1))
    errors.Add(Join(path, "quantile"), Fmt(m->quantile) + " is outside [0.5, 1]");
  if (m->min_samples < 1) errors.Add(Join(path, "minSamples"), "must be >= 1");
  if (m->window < 1 || m->window > 4096)
    errors.Add(Join(path, "window"), "must be in [1, 4096]");
  else if (m->min_samples > m->window)
    errors.Add(Join(path, "minSamples"), "must not exceed window " + std::to_string(m->window));
  if (!(m->headroom >= 0 && m->headroom <= 1))
    errors.Add(Join(path, "headroom"), Fmt(m->headroom) + " is outside [0, 1]");
  for (char ch : m->file)
    if (static_cast<unsigned char>(ch) < 0x20) {
      errors.Add(Join(path, "file"), "contains a control character");
      break;
    }
}

void ReadTenants(const YAML::Node& node, const std::string& path, const PolicyConfig& base,
                 std::vector<TenantConfig>* out, ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  for (const auto& kv : node) {
    const std::string ns = kv.first.Scalar();
    const std::string tp = Join(path, ns);
    // A DNS-1123 label, as Kubernetes requires: anything else matches no pod, and
    // bytes such as control characters would not survive check-config's dump.
    bool valid = !ns.empty() && ns.size() <= 63 && ns.front() != '-' && ns.back() != '-';
    for (char ch : ns)
      valid = valid && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-');
    if (!valid) {
      errors.Add(path,
                 QuoteInput(ns) +
                     " is not a namespace name (lowercase letters, digits and '-', at most 63)");
      continue;
    }
    TenantConfig t;
    t.namespace_name = ns;
    t.thresholds = base.thresholds;
    const YAML::Node v = kv.second;
    if (v && !v.IsNull() && !v.IsMap()) {
      errors.Add(tp, "expected a mapping");
      continue;
    }
    CheckKeys(v, tp, {"thresholds", "podThresholdRange"}, errors);
    ReadThresholds(v["thresholds"], Join(tp, "thresholds"), &t.thresholds, errors);
    ValidateThresholds(t.thresholds, Join(tp, "thresholds"), errors);
    if (const double reject_eff =
            t.thresholds.gpu_memory.reject - base.reject_threshold_safety_margin;
        base.reject_threshold_safety_margin > 0 &&
        t.thresholds.gpu_memory.warn < t.thresholds.gpu_memory.reject &&
        !(reject_eff > t.thresholds.gpu_memory.warn))
      errors.Add(Join(tp, "thresholds.gpuMemory.reject"),
                 Fmt(t.thresholds.gpu_memory.reject) + " minus rejectThresholdSafetyMargin " +
                     Fmt(base.reject_threshold_safety_margin) + " is not above warn " +
                     Fmt(t.thresholds.gpu_memory.warn));
    t.pod_threshold_min = 0;
    t.pod_threshold_max = t.thresholds.gpu_memory.reject;
    const std::string rp = Join(tp, "podThresholdRange");
    if (IsMap(v["podThresholdRange"], rp, errors)) {
      CheckKeys(v["podThresholdRange"], rp, {"min", "max"}, errors);
      ReadDouble(v["podThresholdRange"], rp, "min", &t.pod_threshold_min, errors);
      ReadDouble(v["podThresholdRange"], rp, "max", &t.pod_threshold_max, errors);
      CheckFraction(t.pod_threshold_min, rp + ".min", errors);
      CheckFraction(t.pod_threshold_max, rp + ".max", errors);
      if (t.pod_threshold_min > t.pod_threshold_max)
        errors.Add(rp + ".min",
                   Fmt(t.pod_threshold_min) + " is above max " + Fmt(t.pod_threshold_max));
    }
    out->push_back(std::move(t));
  }
}

std::vector<PluginConfig> DefaultPlugins() {
  std::vector<PluginConfig> out;
  for (const auto& e : Registry())
    if (e.default_enabled) out.push_back({e.name, true, e.default_weight, e.default_args});
  return out;
}

void ReadPlugins(const YAML::Node& node, const std::string& path, std::vector<PluginConfig>* out,
                 ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  out->clear();
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    const std::string pp = Join(path, name);
    const PluginEntry* entry = FindPlugin(name);
    if (!entry) {
      std::string known;
      for (const auto& e : Registry()) known += (known.empty() ? "" : ", ") + e.name;
      errors.Add(pp, "unknown plugin (expected one of: " + known + ")");
      continue;
    }
    PluginConfig pc{name, true, entry->default_weight, ""};
    const YAML::Node v = kv.second;
    if (v && !v.IsNull()) {
      if (!v.IsMap()) {
        errors.Add(pp, "expected a mapping");
        continue;
      }
      CheckKeys(v, pp, {"enabled", "weight", "args"}, errors);
      ReadBool(v, pp, "enabled", &pc.enabled, errors);
      ReadDouble(v, pp, "weight", &pc.weight, errors);
      if (!(pc.weight > 0 && pc.weight <= 100))
        errors.Add(Join(pp, "weight"), Fmt(pc.weight) + " is outside (0, 100]");
      if (const YAML::Node a = v["args"]; a && !a.IsNull()) {
        YAML::Emitter e;
        e << YAML::Flow << a;
        pc.args = e.c_str();
      }
    }
    // Validate the args by building the plugin once; the factory names each field.
    entry->make(pc.ArgsNode(), Join(pp, "args"), errors);
    out->push_back(std::move(pc));
  }
}

// A Prometheus label name, as PromQL's `by (...)` and selectors take it: it is
// written into queries, so nothing else may pass.
bool IsLabelName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char ch = name[i];
    const bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
    if (!alpha && !(i > 0 && ch >= '0' && ch <= '9')) return false;
  }
  return name.rfind("__", 0) != 0;  // reserved for Prometheus's own labels
}

void ReadLabelName(const YAML::Node& node, const std::string& path, const char* key,
                   std::string* out, ConfigErrors& errors) {
  std::string v = *out;
  ReadString(node, path, key, &v, errors);
  if (!IsLabelName(v)) {
    errors.Add(Join(path, key), QuoteInput(v) +
                                    " is not a label name (letters, digits and '_', not "
                                    "starting with a digit or \"__\")");
    return;
  }
  *out = v;
}

void ReadSourceKind(const YAML::Node& node, const std::string& path, const char* key,
                    std::initializer_list<MetricsSourceKind> allowed, MetricsSourceKind* out,
                    ConfigErrors& errors) {
  std::string v = MetricsSourceName(*out);
  ReadString(node, path, key, &v, errors);
  std::string expected;
  for (MetricsSourceKind k : allowed) {
    if (v == MetricsSourceName(k)) {
      *out = k;
      return;
    }
    expected += (expected.empty() ? "" : " or ") + std::string(MetricsSourceName(k));
  }
  errors.Add(Join(path, key), QuoteInput(v) + " (expected " + expected + ")");
}

// The devices' regular expression goes into a PromQL raw string (backticks) and
// is matched by Prometheus (RE2). std::regex (ECMAScript) stands in for RE2 here:
// the two agree on the syntax a device pattern needs; the constructs only one of
// them has are refused with a message rather than left for a failing query.
void CheckDeviceRegex(const std::string& re, const std::string& path, ConfigErrors& errors) {
  if (re.empty()) {
    errors.Add(path, "expected a regular expression (the data disks' device names)");
    return;
  }
  for (char ch : re)
    if (ch == '`' || static_cast<unsigned char>(ch) < 0x20) {
      errors.Add(path, "contains a backtick or a control character");
      return;
    }
  for (const char* unsupported : {"(?=", "(?!", "(?<=", "(?<!", "\\1", "\\2"})
    if (re.find(unsupported) != std::string::npos) {
      errors.Add(path, QuoteInput(unsupported) +
                           ": look-around and back-references are not RE2 (Prometheus's "
                           "regular expressions)");
      return;
    }
  try {
    const std::regex compiled(re, std::regex::ECMAScript);
    (void)compiled;
  } catch (const std::regex_error& e) {
    errors.Add(path, QuoteInput(re) + " is not a regular expression: " + e.what());
  }
}

void ReadGpuModels(const YAML::Node& node, const std::string& path,
                   std::map<std::string, GpuModelInfo>* out, ConfigErrors& errors) {
  if (!IsMap(node, path, errors)) return;
  out->clear();
  for (const auto& kv : node) {
    const std::string model = kv.first.Scalar();
    const std::string mp = Join(path, model);
    if (model.empty() || !CheckUtf8(model, path, errors)) {
      if (model.empty()) errors.Add(path, "a model name is empty (expected modelName's value)");
      continue;
    }
    GpuModelInfo info;
    const YAML::Node v = kv.second;
    if (!IsMap(v, mp, errors)) {
      if (!v || v.IsNull())
        errors.Add(mp, "expected a mapping (topology, linksPerPair, nvlinkPeakGBps)");
      continue;
    }
    CheckKeys(v, mp, {"topology", "linksPerPair", "nvlinkPeakGBps"}, errors);
    std::string topology = "none";
    ReadString(v, mp, "topology", &topology, errors);
    if (topology == "fully-linked")
      info.fully_linked = true;
    else if (topology != "none")
      errors.Add(Join(mp, "topology"), QuoteInput(topology) + " (expected fully-linked or none)");
    ReadInt(v, mp, "linksPerPair", &info.links_per_pair, errors);
    if (info.links_per_pair < 1 || info.links_per_pair > 64)
      errors.Add(Join(mp, "linksPerPair"), "must be in [1, 64]");
    ReadDouble(v, mp, "nvlinkPeakGBps", &info.nvlink_peak_gbps, errors);
    if (!(info.nvlink_peak_gbps >= 0 && info.nvlink_peak_gbps <= 1e6))
      errors.Add(Join(mp, "nvlinkPeakGBps"),
                 Fmt(info.nvlink_peak_gbps) + " is outside [0, 1e6] (GB/s; 0: not known)");
    (*out)[model] = info;
  }
}

void ReadMetricsSource(const YAML::Node& node, const std::string& path, MetricsSourceConfig* m,
                       ConfigErrors& errors) {
  if (!node || node.IsNull()) return;
  using K = MetricsSourceKind;
  if (node.IsScalar()) {
    // Shorthands for the two common set-ups.
    const std::string v = node.Scalar();
    if (v == "tidal-agent") {
      m->gpu_memory = m->nvlink = m->storage = K::kTidalAgent;
    } else if (v == "dcgm-exporter+node-exporter") {
      m->gpu_memory = m->nvlink = K::kDcgmExporter;
      m->storage = K::kNodeExporter;
    } else {
      errors.Add(path, QuoteInput(v) +
                           " (expected tidal-agent, dcgm-exporter+node-exporter, or a mapping "
                           "with gpuMemory, nvlink and storage)");
    }
    return;
  }
  if (!IsMap(node, path, errors)) return;
  CheckKeys(node, path,
            {"gpuMemory", "nvlink", "storage", "dcgmExporter", "nodeExporter", "gpuModels"},
            errors);
  ReadSourceKind(node, path, "gpuMemory", {K::kTidalAgent, K::kDcgmExporter}, &m->gpu_memory,
                 errors);
  ReadSourceKind(node, path, "nvlink", {K::kTidalAgent, K::kDcgmExporter}, &m->nvlink, errors);
  ReadSourceKind(node, path, "storage", {K::kTidalAgent, K::kNodeExporter}, &m->storage, errors);
  const std::string dp = Join(path, "dcgmExporter");
  if (const YAML::Node d = node["dcgmExporter"]; IsMap(d, dp, errors)) {
    CheckKeys(d, dp, {"nodeLabel", "nvlinkSeries", "bandwidthTotalBytesPerUnit"}, errors);
    ReadLabelName(d, dp, "nodeLabel", &m->dcgm_node_label, errors);
    std::string series =
        m->dcgm_nvlink_series == DcgmNvlinkSeries::kProfiling ? "profiling" : "bandwidth-total";
    ReadString(d, dp, "nvlinkSeries", &series, errors);
    if (series == "profiling")
      m->dcgm_nvlink_series = DcgmNvlinkSeries::kProfiling;
    else if (series == "bandwidth-total")
      m->dcgm_nvlink_series = DcgmNvlinkSeries::kBandwidthTotal;
    else
      errors.Add(Join(dp, "nvlinkSeries"),
                 QuoteInput(series) + " (expected profiling or bandwidth-total)");
    ReadDouble(d, dp, "bandwidthTotalBytesPerUnit", &m->dcgm_bandwidth_total_bytes_per_unit,
               errors);
    if (!(m->dcgm_bandwidth_total_bytes_per_unit > 0 &&
          m->dcgm_bandwidth_total_bytes_per_unit <= 1e12))
      errors.Add(Join(dp, "bandwidthTotalBytesPerUnit"),
                 Fmt(m->dcgm_bandwidth_total_bytes_per_unit) + " is outside (0, 1e12]");
  }
  const std::string np = Join(path, "nodeExporter");
  if (const YAML::Node n = node["nodeExporter"]; IsMap(n, np, errors)) {
    CheckKeys(n, np, {"nodeLabel", "devices", "rateWindow"}, errors);
    ReadLabelName(n, np, "nodeLabel", &m->node_exporter_node_label, errors);
    std::string devices = m->node_exporter_devices;
    ReadString(n, np, "devices", &devices, errors);
    ConfigErrors local;
    CheckDeviceRegex(devices, Join(np, "devices"), local);
    if (local.empty()) m->node_exporter_devices = devices;
    errors.Merge(local);
    ReadDuration(n, np, "rateWindow", &m->node_exporter_rate_window_ms, errors);
    // Two samples at least inside the window, and not so long that a burst averages away.
    if (m->node_exporter_rate_window_ms < 1000 || m->node_exporter_rate_window_ms > 3'600'000)
      errors.Add(Join(np, "rateWindow"), "must be in [1s, 1h]");
  }
  ReadGpuModels(node["gpuModels"], Join(path, "gpuModels"), &m->gpu_models, errors);
}
}  // namespace

PolicyConfig ParsePolicyConfig(const YAML::Node& root, ConfigErrors& errors) {
  PolicyConfig c;
  c.plugins = DefaultPlugins();
  if (!root || root.IsNull()) return c;
  if (!root.IsMap()) {
    errors.Add("(root)", "expected a mapping");
    return c;
  }
  CheckKeys(root, "",
            {"thresholds", "rejectThresholdSafetyMargin", "gpuMemoryDecaySlope", "metricCacheTTL",
             "queryTimeout", "metricsStaleAfter", "nvlink", "memoryEstimate", "fallback",
             "reservations", "loadForecast", "memoryLearning", "whenAllRejected", "lookAhead",
             "tenants", "plugins", "metricsSource"},
            errors);
  ReadThresholds(root["thresholds"], "thresholds", &c.thresholds, errors);
  ValidateThresholds(c.thresholds, "thresholds", errors);
  ReadDouble(root, "", "rejectThresholdSafetyMargin", &c.reject_threshold_safety_margin, errors);
  if (!(c.reject_threshold_safety_margin >= 0 && c.reject_threshold_safety_margin <= 0.5))
    errors.Add("rejectThresholdSafetyMargin",
               Fmt(c.reject_threshold_safety_margin) + " is outside [0, 0.5]");
  if (root["gpuMemoryDecaySlope"] && !root["gpuMemoryDecaySlope"].IsNull()) {
    ConfigErrors local;
    ReadDouble(root, "", "gpuMemoryDecaySlope", &c.gpu_memory_decay_slope, local);
    for (const auto& e : local.items())
      errors.Add("gpuMemoryDecaySlope", e.substr(e.find(": ") + 2));
    c.decay_slope_set = local.empty();
    const double reject_eff = c.thresholds.gpu_memory.reject - c.reject_threshold_safety_margin;
    if (!(c.gpu_memory_decay_slope > 0 && c.gpu_memory_decay_slope <= reject_eff))
      errors.Add("gpuMemoryDecaySlope", Fmt(c.gpu_memory_decay_slope) + " is outside (0, " +
                                            FmtDerived(reject_eff) +
                                            "] (the effective GPU memory reject threshold)");
  } else {
    // Unset: the band runs from the warning threshold to the effective reject threshold.
    c.gpu_memory_decay_slope = c.thresholds.gpu_memory.reject - c.reject_threshold_safety_margin -
                               c.thresholds.gpu_memory.warn;
  }
  // A margin that pulls the effective reject threshold to or below warn leaves no
  // warning band: every node past warn would already be rejected.
  if (const double reject_eff = c.thresholds.gpu_memory.reject - c.reject_threshold_safety_margin;
      c.reject_threshold_safety_margin > 0 &&
      c.thresholds.gpu_memory.warn < c.thresholds.gpu_memory.reject &&
      !(reject_eff > c.thresholds.gpu_memory.warn))
    errors.Add("rejectThresholdSafetyMargin",
               Fmt(c.reject_threshold_safety_margin) +
                   " puts the effective GPU memory reject threshold at " + FmtDerived(reject_eff) +
                   ", not above warn " + Fmt(c.thresholds.gpu_memory.warn));
  ReadDuration(root, "", "metricCacheTTL", &c.metric_cache_ttl_ms, errors);
  if (c.metric_cache_ttl_ms < 1000) errors.Add("metricCacheTTL", "must be at least 1s");
  ReadDuration(root, "", "queryTimeout", &c.query_timeout_ms, errors);
  if (c.query_timeout_ms < 100) errors.Add("queryTimeout", "must be at least 100ms");
  ReadDuration(root, "", "metricsStaleAfter", &c.metrics_stale_after_ms, errors);
  ReadNvlink(root["nvlink"], "nvlink", &c.nvlink, errors);
  ReadMemoryEstimate(root["memoryEstimate"], "memoryEstimate", &c.memory_estimate, errors);
  ReadFallback(root["fallback"], "fallback", &c.fallback, errors);
  ReadReservations(root["reservations"], "reservations", &c.reservations, errors);
  ReadForecast(root["loadForecast"], "loadForecast", &c.load_forecast, errors);
  ReadMemoryLearning(root["memoryLearning"], "memoryLearning", &c.memory_learning, errors);
  std::string when = "pending";
  ReadString(root, "", "whenAllRejected", &when, errors);
  if (when == "pending")
    c.when_all_rejected = WhenAllRejected::kPending;
  else if (when == "least-loaded")
    c.when_all_rejected = WhenAllRejected::kLeastLoaded;
  else
    errors.Add("whenAllRejected", "\"" + when + "\" (expected pending or least-loaded)");
  ReadBool(root, "", "lookAhead", &c.look_ahead, errors);
  ReadTenants(root["tenants"], "tenants", c, &c.tenants, errors);
  ReadPlugins(root["plugins"], "plugins", &c.plugins, errors);
  ReadMetricsSource(root["metricsSource"], "metricsSource", &c.metrics_source, errors);
  return c;
}

PolicyConfig DefaultPolicyConfig() {
  ConfigErrors errors;
  return ParsePolicyConfig(YAML::Node(), errors);
}

PolicyConfig LoadPolicyConfig(const YAML::Node& root) {
  ConfigErrors errors;
  PolicyConfig c = ParsePolicyConfig(root, errors);
  if (!errors.empty()) throw InputError{errors.Joined()};
  return c;
}

PolicyConfig LoadPolicyConfigFile(const std::string& path) {
  const std::string text = ReadRegularFileOrThrow(path, kMaxConfigFileBytes);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError{path + ": not valid YAML: " + e.what()};
  }
  ConfigErrors errors;
  PolicyConfig c = ParsePolicyConfig(root, errors);
  if (!errors.empty()) throw InputError{errors.Joined()};
  return c;
}

// Every double goes through Fmt, the shortest text that reads back exactly:
// yaml-cpp's own << writes 17 digits (0.7 as 0.69999999999999996). Never
// rounded here, derived values included: the dump must load back as the config
// in effect (fuzz_config checks it). Long because the config is: one line per
// setting, in the file's order, easier to check against the schema as a list.
std::string DumpPolicyConfig(const PolicyConfig& c) {
  YAML::Emitter out;
  auto pair = [&](const char* name, const ThresholdPair& p) {
    out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "warn"
        << YAML::Value << Fmt(p.warn) << YAML::Key << "reject" << YAML::Value << Fmt(p.reject)
        << YAML::EndMap;
  };
  auto thresholds = [&](const Thresholds& t) {
    out << YAML::BeginMap;
    pair("gpuMemory", t.gpu_memory);
    pair("nvlink", t.nvlink);
    pair("storageAwaitMs", t.await_ms);
    out << YAML::EndMap;
  };
  auto dur = [](TimeMs ms) {
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
  };
  out << YAML::BeginMap;
  out << YAML::Key << "thresholds" << YAML::Value;
  thresholds(c.thresholds);
  out << YAML::Key << "rejectThresholdSafetyMargin" << YAML::Value
      << Fmt(c.reject_threshold_safety_margin);
  out << YAML::Key << "gpuMemoryDecaySlope" << YAML::Value << Fmt(c.gpu_memory_decay_slope);
  out << YAML::Key << "metricCacheTTL" << YAML::Value << dur(c.metric_cache_ttl_ms);
  out << YAML::Key << "queryTimeout" << YAML::Value << dur(c.query_timeout_ms);
  out << YAML::Key << "metricsStaleAfter" << YAML::Value << dur(c.metrics_stale_after_ms);
  out << YAML::Key << "nvlink" << YAML::Value << YAML::BeginMap << YAML::Key << "slotsPerGpu"
      << YAML::Value << c.nvlink.slots_per_gpu << YAML::Key << "autoDetect" << YAML::Value
      << YAML::BeginMap << YAML::Key << "imagePatterns" << YAML::Value << YAML::Flow
      << c.nvlink.image_patterns << YAML::Key << "minGpus" << YAML::Value << c.nvlink.min_gpus
      << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "memoryEstimate" << YAML::Value << YAML::BeginMap << YAML::Key
      << "cudaContext" << YAML::Value << FormatBytesExact(c.memory_estimate.cuda_context)
      << YAML::Key << "parameterFactor" << YAML::Value << Fmt(c.memory_estimate.parameter_factor)
      << YAML::Key << "default" << YAML::Value << FormatBytesExact(c.memory_estimate.fallback)
      << YAML::Key << "byLoadType" << YAML::Value << YAML::BeginMap;
  for (const auto& [type, bytes] : c.memory_estimate.by_load_type)
    out << YAML::Key << LoadTypeName(type) << YAML::Value << FormatBytesExact(bytes);
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "fallback" << YAML::Value << YAML::BeginMap << YAML::Key << "stage2After"
      << YAML::Value << dur(c.fallback.stage2_after_ms) << YAML::Key << "goldenPool" << YAML::Value
      << c.fallback.golden_pool << YAML::EndMap;
  out << YAML::Key << "reservations" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled"
      << YAML::Value << c.reservations.enabled << YAML::Key << "ttl" << YAML::Value
      << dur(c.reservations.ttl_ms) << YAML::Key << "visibleAfter" << YAML::Value
      << dur(c.reservations.visible_after_ms) << YAML::Key << "claims" << YAML::Value
      << c.reservations.claims << YAML::EndMap;
  const ForecastConfig& f = c.load_forecast;
  out << YAML::Key << "loadForecast" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled"
      << YAML::Value << f.enabled << YAML::Key << "horizon" << YAML::Value << dur(f.horizon_ms)
      << YAML::Key << "alpha" << YAML::Value << Fmt(f.alpha) << YAML::Key << "beta" << YAML::Value
      << Fmt(f.beta) << YAML::Key << "maxGap" << YAML::Value << dur(f.max_gap_ms) << YAML::EndMap;
  const MemoryLearningConfig& ml = c.memory_learning;
  out << YAML::Key << "memoryLearning" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled"
      << YAML::Value << ml.enabled << YAML::Key << "quantile" << YAML::Value << Fmt(ml.quantile)
      << YAML::Key << "minSamples" << YAML::Value << ml.min_samples << YAML::Key << "window"
      << YAML::Value << ml.window << YAML::Key << "headroom" << YAML::Value << Fmt(ml.headroom)
      << YAML::Key << "file" << YAML::Value << ml.file << YAML::EndMap;
  out << YAML::Key << "whenAllRejected" << YAML::Value
      << (c.when_all_rejected == WhenAllRejected::kPending ? "pending" : "least-loaded");
  out << YAML::Key << "lookAhead" << YAML::Value << c.look_ahead;
  out << YAML::Key << "tenants" << YAML::Value << YAML::BeginMap;
  for (const auto& t : c.tenants) {
    out << YAML::Key << t.namespace_name << YAML::Value << YAML::BeginMap << YAML::Key
        << "thresholds" << YAML::Value;
    thresholds(t.thresholds);
    out << YAML::Key << "podThresholdRange" << YAML::Value << YAML::Flow << YAML::BeginMap
        << YAML::Key << "min" << YAML::Value << Fmt(t.pod_threshold_min) << YAML::Key << "max"
        << YAML::Value << Fmt(t.pod_threshold_max) << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndMap;
  const MetricsSourceConfig& ms = c.metrics_source;
  out << YAML::Key << "metricsSource" << YAML::Value << YAML::BeginMap << YAML::Key << "gpuMemory"
      << YAML::Value << MetricsSourceName(ms.gpu_memory) << YAML::Key << "nvlink" << YAML::Value
      << MetricsSourceName(ms.nvlink) << YAML::Key << "storage" << YAML::Value
      << MetricsSourceName(ms.storage);
  out << YAML::Key << "dcgmExporter" << YAML::Value << YAML::BeginMap << YAML::Key << "nodeLabel"
      << YAML::Value << ms.dcgm_node_label << YAML::Key << "nvlinkSeries" << YAML::Value
      << (ms.dcgm_nvlink_series == DcgmNvlinkSeries::kProfiling ? "profiling" : "bandwidth-total")
      << YAML::Key << "bandwidthTotalBytesPerUnit" << YAML::Value
      << Fmt(ms.dcgm_bandwidth_total_bytes_per_unit) << YAML::EndMap;
  out << YAML::Key << "nodeExporter" << YAML::Value << YAML::BeginMap << YAML::Key << "nodeLabel"
      << YAML::Value << ms.node_exporter_node_label << YAML::Key << "devices" << YAML::Value
      << YAML::SingleQuoted << ms.node_exporter_devices << YAML::Key << "rateWindow" << YAML::Value
      << dur(ms.node_exporter_rate_window_ms) << YAML::EndMap;
  out << YAML::Key << "gpuModels" << YAML::Value << YAML::BeginMap;
  for (const auto& [model, info] : ms.gpu_models)
    out << YAML::Key << model << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
        << "topology" << YAML::Value << (info.fully_linked ? "fully-linked" : "none") << YAML::Key
        << "linksPerPair" << YAML::Value << info.links_per_pair << YAML::Key << "nvlinkPeakGBps"
        << YAML::Value << Fmt(info.nvlink_peak_gbps) << YAML::EndMap;
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "plugins" << YAML::Value << YAML::BeginMap;
  for (const auto& p : c.plugins) {
    out << YAML::Key << p.name << YAML::Value << YAML::BeginMap << YAML::Key << "enabled"
        << YAML::Value << p.enabled << YAML::Key << "weight" << YAML::Value << Fmt(p.weight);
    if (!p.args.empty()) out << YAML::Key << "args" << YAML::Value << p.ArgsNode();
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace tidal
