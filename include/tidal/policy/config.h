#pragma once
// The policy configuration: one YAML file, every default from docs/design.md.
// Loading collects every problem with its field path; nothing half-loaded is used.
#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/types.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/metrics/source_config.h"
#include "tidal/policy/thresholds.h"

namespace tidal {

// Collects config problems as "field.path: what is wrong".
class ConfigErrors {
 public:
  void Add(const std::string& path, const std::string& message) {
    items_.push_back(path + ": " + message);
  }
  void Merge(const ConfigErrors& other) {
    items_.insert(items_.end(), other.items_.begin(), other.items_.end());
  }
  bool empty() const { return items_.empty(); }
  const std::vector<std::string>& items() const { return items_; }
  std::string Joined() const;

 private:
  std::vector<std::string> items_;
};

struct TenantConfig {
  std::string namespace_name;
  Thresholds thresholds;  // the cluster's, with the tenant's overrides applied
  // Range inside which a pod's ai.gpu-reject-threshold may move the GPU memory
  // reject threshold; values outside are clamped to it.
  double pod_threshold_min = 0.0;
  double pod_threshold_max = 0.85;
};

struct MemoryEstimate {
  Bytes cuda_context = Bytes{1} << 30;  // 1 GiB
  double parameter_factor = 3.0;        // real use is 2–3× the parameters
  Bytes fallback = Bytes{8} << 30;      // no declaration, no model size, no type
  std::map<LoadType, Bytes> by_load_type{{LoadType::kGpuHeavy, Bytes{16} << 30},
                                         {LoadType::kIoHeavy, Bytes{4} << 30},
                                         {LoadType::kNvlinkHeavy, Bytes{16} << 30},
                                         {LoadType::kInference, Bytes{8} << 30}};
};

struct FallbackConfig {
  TimeMs stage2_after_ms = 10'000;
  Labels golden_pool{{"tidal.io/pool", "golden"}};
};

// In-flight reservations (docs/design.md#reservations): what the extender bound, counted in filter
// and score until a metrics sample shows it.
struct ReservationConfig {
  bool enabled = true;
  TimeMs ttl_ms = 120'000;
  // A sample this much newer than the bind shows the pod (the agent's interval
  // plus Prometheus's scrape interval).
  TimeMs visible_after_ms = 15'000;
  bool claims = true;  // keep the estimate as a floor of the GPU's use while the pod runs
};

// Short-horizon load forecast (Holt's linear trend per node and dimension): the
// loadaware score reads where a node's load is going, not where the last sample
// was. The filter keeps judging the measured load (a forecast never admits a node
// the measurement rejects).
struct ForecastConfig {
  bool enabled = false;
  // How far past the request the forecast looks: about a pod's start-up time. The
  // metrics lag (request time − sample time) is added on top, since the forecast
  // is evaluated at request time + horizon from the last sample.
  TimeMs horizon_ms = 30'000;
  double alpha = 0.5;           // level smoothing
  double beta = 0.3;            // trend smoothing
  TimeMs max_gap_ms = 120'000;  // samples further apart restart the series
};

// Learned GPU memory per workload key (namespace, image, AI_LOAD_TYPE, model
// size) for pods without ai.gpu-memory: a high quantile of the peaks observed
// for earlier pods of the key, once minSamples exist; the static rule before
// (docs/design.md#memory-estimate).
struct MemoryLearningConfig {
  bool enabled = false;
  double quantile = 0.95;
  int min_samples = 3;
  int window = 64;         // most recent peaks kept per key
  double headroom = 0.10;  // added on top of the quantile
  std::string file;        // where what was learned is kept across restarts; empty: memory only
};

enum class WhenAllRejected { kPending, kLeastLoaded };

struct PluginConfig {
  std::string name;
  bool enabled = true;
  double weight = 1;
  // The plugin's args as YAML text (empty: defaults), decoded and validated by the
  // plugin's own args type. Text, not a YAML::Node: nodes alias on assignment.
  std::string args;
  YAML::Node ArgsNode() const { return args.empty() ? YAML::Node() : YAML::Load(args); }
};

struct PolicyConfig {
  Thresholds thresholds;
  double reject_threshold_safety_margin = 0.03;
  double gpu_memory_decay_slope = 0.12;
  bool decay_slope_set =
      false;  // explicit slope: the memory band is [reject_eff − slope, reject_eff]
  TimeMs metric_cache_ttl_ms = 20'000;
  TimeMs query_timeout_ms = 5'000;
  TimeMs metrics_stale_after_ms = 60'000;  // a node's series older than this: unknown
  NvlinkDetection nvlink;
  MemoryEstimate memory_estimate;
  FallbackConfig fallback;
  ReservationConfig reservations;
  ForecastConfig load_forecast;
  MemoryLearningConfig memory_learning;
  MetricsSourceConfig metrics_source;
  WhenAllRejected when_all_rejected = WhenAllRejected::kPending;
  // tidal serve with the pod watch: each pod placed with the next pod in
  // kube-scheduler's queue in view (tidal/policy/look_ahead.h).
  bool look_ahead = true;
  std::vector<TenantConfig> tenants;
  std::vector<PluginConfig> plugins;  // in order; defaults: loadaware, gpufit, balance

  const TenantConfig* TenantFor(const std::string& ns) const;
};

// Parses and validates; throws InputError listing every problem.
PolicyConfig LoadPolicyConfig(const YAML::Node& root);
PolicyConfig LoadPolicyConfigFile(const std::string& path);
PolicyConfig DefaultPolicyConfig();
// Parses and validates without throwing; errors go to `errors`.
PolicyConfig ParsePolicyConfig(const YAML::Node& root, ConfigErrors& errors);

// The effective configuration as YAML (what check-config prints).
std::string DumpPolicyConfig(const PolicyConfig& config);

// Duration strings: "20s", "500ms", "2m", "1h", or a bare number of seconds.
std::optional<TimeMs> ParseDurationMs(const std::string& text);

}  // namespace tidal
