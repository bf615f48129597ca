// The policy config as check-config and the extender load it: YAML text, then
// ParsePolicyConfig. Bad input only adds errors with field paths; a config that
// loads dumps to YAML that loads again to the same dump.
#include "tidal/policy/config.h"

#include <string>

#include "check.h"

namespace {

bool Load(const std::string& text, YAML::Node* root) {
  try {
    *root = YAML::Load(text);
    return true;
  } catch (const YAML::Exception&) {
    return false;  // LoadPolicyConfigFile reports these as "not valid YAML"
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  YAML::Node root;
  if (!Load(std::string(tidal::fuzz::AsText(data, size)), &root)) return 0;
  tidal::ConfigErrors errors;
  const tidal::PolicyConfig config = tidal::ParsePolicyConfig(root, errors);
  if (!errors.empty()) {
    for (const std::string& e : errors.items())
      TIDAL_FUZZ_CHECK(e.find(": ") != std::string::npos, "every error is \"path: message\"");
    return 0;
  }
  const std::string dumped = tidal::DumpPolicyConfig(config);
  YAML::Node again;
  TIDAL_FUZZ_CHECK(Load(dumped, &again), "the effective config is valid YAML");
  tidal::ConfigErrors errors2;
  const tidal::PolicyConfig reloaded = tidal::ParsePolicyConfig(again, errors2);
  if (!errors2.empty())
    std::fprintf(stderr, "%s\n---\n%s\n", dumped.c_str(), errors2.Joined().c_str());
  TIDAL_FUZZ_CHECK(errors2.empty(), "the effective config loads without errors");
  TIDAL_FUZZ_CHECK(tidal::DumpPolicyConfig(reloaded) == dumped, "dump, load, dump is stable");
  // The printed config is the one in effect, not an approximation of it.
  TIDAL_FUZZ_CHECK(reloaded.thresholds == config.thresholds, "thresholds survive the dump");
  TIDAL_FUZZ_CHECK(
      reloaded.reject_threshold_safety_margin == config.reject_threshold_safety_margin &&
          reloaded.gpu_memory_decay_slope == config.gpu_memory_decay_slope,
      "margin and slope survive the dump");
  TIDAL_FUZZ_CHECK(reloaded.metric_cache_ttl_ms == config.metric_cache_ttl_ms &&
                       reloaded.query_timeout_ms == config.query_timeout_ms &&
                       reloaded.metrics_stale_after_ms == config.metrics_stale_after_ms &&
                       reloaded.fallback.stage2_after_ms == config.fallback.stage2_after_ms,
                   "durations survive the dump");
  const tidal::MemoryEstimate& m = config.memory_estimate;
  const tidal::MemoryEstimate& r = reloaded.memory_estimate;
  TIDAL_FUZZ_CHECK(r.cuda_context == m.cuda_context && r.fallback == m.fallback &&
                       r.by_load_type == m.by_load_type && r.parameter_factor == m.parameter_factor,
                   "memory estimates survive the dump");
  const tidal::ForecastConfig& fa = config.load_forecast;
  const tidal::ForecastConfig& fb = reloaded.load_forecast;
  TIDAL_FUZZ_CHECK(fa.enabled == fb.enabled && fa.horizon_ms == fb.horizon_ms &&
                       fa.alpha == fb.alpha && fa.beta == fb.beta && fa.max_gap_ms == fb.max_gap_ms,
                   "the load forecast survives the dump");
  const tidal::MemoryLearningConfig& la = config.memory_learning;
  const tidal::MemoryLearningConfig& lb = reloaded.memory_learning;
  TIDAL_FUZZ_CHECK(la.enabled == lb.enabled && la.quantile == lb.quantile &&
                       la.min_samples == lb.min_samples && la.window == lb.window &&
                       la.headroom == lb.headroom && la.file == lb.file,
                   "memory learning survives the dump");
  TIDAL_FUZZ_CHECK(reloaded.nvlink.image_patterns == config.nvlink.image_patterns &&
                       reloaded.nvlink.min_gpus == config.nvlink.min_gpus &&
                       reloaded.nvlink.slots_per_gpu == config.nvlink.slots_per_gpu,
                   "NVLink auto-detection survives the dump");
  const tidal::MetricsSourceConfig& sa = config.metrics_source;
  const tidal::MetricsSourceConfig& sb = reloaded.metrics_source;
  TIDAL_FUZZ_CHECK(
      sa.gpu_memory == sb.gpu_memory && sa.nvlink == sb.nvlink && sa.storage == sb.storage &&
          sa.dcgm_node_label == sb.dcgm_node_label &&
          sa.dcgm_nvlink_series == sb.dcgm_nvlink_series &&
          sa.dcgm_bandwidth_total_bytes_per_unit == sb.dcgm_bandwidth_total_bytes_per_unit &&
          sa.node_exporter_node_label == sb.node_exporter_node_label &&
          sa.node_exporter_devices == sb.node_exporter_devices &&
          sa.node_exporter_rate_window_ms == sb.node_exporter_rate_window_ms &&
          sa.gpu_models == sb.gpu_models,
      "the metrics source survives the dump");
  TIDAL_FUZZ_CHECK(reloaded.fallback.golden_pool == config.fallback.golden_pool,
                   "the golden pool survives the dump");
  TIDAL_FUZZ_CHECK(reloaded.tenants.size() == config.tenants.size() &&
                       reloaded.plugins.size() == config.plugins.size(),
                   "tenants and plugins survive the dump");
  for (std::size_t i = 0; i < config.tenants.size(); ++i) {
    const tidal::TenantConfig& a = config.tenants[i];
    const tidal::TenantConfig& b = reloaded.tenants[i];
    TIDAL_FUZZ_CHECK(a.namespace_name == b.namespace_name && a.thresholds == b.thresholds &&
                         a.pod_threshold_min == b.pod_threshold_min &&
                         a.pod_threshold_max == b.pod_threshold_max,
                     "each tenant survives the dump");
  }
  return 0;
}
