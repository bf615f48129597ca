#pragma once
// `tidal health`: the three golden metrics (docs/design.md#golden-metrics) read from Prometheus,
// each against its threshold. The numbers are computed by tidal/metrics/golden.h
// (the simulator's report uses the same functions); Prometheus only supplies
// per-node and per-GPU inputs. Queries go through an injected function so that
// the evaluation is tested without a server.
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"
#include "tidal/metrics/golden.h"
#include "tidal/metrics/prometheus_client.h"

namespace tidal::health {

// An instant query at `time_s` (Unix seconds). PrometheusClient::Query in production.
using QueryFn =
    std::function<Status(const std::string& expr, double time_s, prom::QueryResult* out)>;

// Which pods are AI pods, as kube-state-metrics exports pod labels or annotations
// (kube_pod_labels{label_<key>=...}, kube_pod_annotations{annotation_<key>=...}).
struct AiPodSelector {
  enum class Source { kLabel, kAnnotation };
  Source source = Source::kLabel;
  std::string key = "tidal.io/workload";
  std::string value = "ai";
};

// Parses "KEY=VALUE" (the flag's value); throws InputError naming `flag`.
AiPodSelector ParseSelector(AiPodSelector::Source source, const std::string& text,
                            std::string_view flag);

struct Options {
  double time_s = 0;            // evaluation time, Unix seconds
  double window_s = 300;        // averaging window of LSCS and NVLink (5-minute averages)
  double trend_range_s = 1800;  // LSCS trend: the last 30 minutes ...
  double trend_step_s = 60;     // ... one point a minute
  AiPodSelector ai_pods;
  double lscs_max = kLscsHealthy;
  double migration_rate_max = kMigrationRateHealthy;  // healthy strictly below
  double nvlink_variance_max = kNvlinkVarianceHealthy;
};

enum class Verdict { kHealthy, kUnhealthy, kUnknown };
std::string_view VerdictName(Verdict v);

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct LscsResult {
  Verdict verdict = Verdict::kUnknown;
  double value = kNaN;                  // now
  std::map<std::string, double> nodes;  // node -> window-average GPU-memory utilisation
  // Trend over the last trend_range_s: LSCS at each subquery step, its first and
  // last value, and the least-squares slope (per hour; negative = decaying).
  std::vector<std::pair<double, double>> trend;  // (time_s, lscs)
  double trend_slope_per_hour = kNaN;
  std::string detail;
};

struct MigrationResult {
  Verdict verdict = Verdict::kUnknown;
  double migrated = kNaN;  // distinct AI pods evicted or OOM-killed in the last hour
  double started = kNaN;   // distinct AI pods started in the last hour
  double rate = kNaN;
  std::string detail;
};

struct NvlinkResult {
  Verdict verdict = Verdict::kUnknown;
  std::map<std::string, double> nodes;  // node -> variance across its GPUs
  std::string worst_node;
  double worst = kNaN;
  bool applicable = true;  // false when no GPU reports an active NVLink
  std::string detail;
};

struct Report {
  double time_s = 0;
  Options options;
  LscsResult lscs;
  MigrationResult migration;
  NvlinkResult nvlink;
  Verdict overall = Verdict::kUnknown;
};

// Runs the queries and judges each metric. Never throws: a failed query makes
// its metric unknown, with the error in its detail.
Report Evaluate(const QueryFn& query, const Options& options);

// 0 healthy, 1 any metric unhealthy, 2 cannot tell (a metric unknown, none unhealthy).
int ExitCode(const Report& report);

std::string FormatTable(const Report& report);
std::string FormatJson(const Report& report);

// The PromQL used, exposed so that tests can hold it to the recording rules.
std::string NodeMemoryQuery(double window_s);
std::string NvlinkGpuQuery(double window_s);
std::string AiPodSeries(const AiPodSelector& selector);
std::string StartedQuery(const AiPodSelector& selector);
std::string MigratedQuery(const AiPodSelector& selector);

// A PromQL duration for whole seconds: 300 -> "300s".
std::string PromDuration(double seconds);

}  // namespace tidal::health
