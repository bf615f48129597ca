// tidal health: the three golden metrics from Prometheus, each with a verdict;
// exit 0 healthy, 1 unhealthy, 2 cannot tell (for cron and CI).
#include <cmath>
#include <ctime>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/health/health.h"
#include "tidal/metrics/prometheus_client.h"
#include "tidal/policy/config.h"

namespace tidal::cli {
namespace {

struct HealthFlags {
  std::string prometheus;
  std::string window = "5m";
  std::string output = "table";
  std::string time;
  std::string timeout = "10s";
  std::string ai_pod_label;
  std::string ai_pod_annotation;
  std::string bearer_token_file;
  std::string ca_file;
};

double Seconds(const std::string& flag, const std::string& text, double min_s) {
  auto ms = ParseDurationMs(text);
  if (!ms || *ms < min_s * 1000)
    throw InputError{flag + " " + text + ": expected a duration of at least " +
                     std::to_string(int(min_s)) + "s, such as 5m or 30s"};
  return static_cast<double>(*ms) / 1000;
}

// Unix seconds, or RFC 3339 in UTC (2026-01-01T00:00:00Z), as the query API takes.
double ParseTime(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && v >= 0) return v;
  } catch (const std::exception&) {
  }
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end != '\0')
    throw InputError{"--time " + text +
                     ": expected Unix seconds or RFC 3339 UTC such as 2026-01-01T00:00:00Z"};
  return static_cast<double>(timegm(&tm));
}

int RunHealth(const HealthFlags& f, const Clock& clock) {
  if (f.output != "table" && f.output != "json")
    throw InputError{"--output " + f.output + ": expected table or json"};
  health::Options o;
  o.window_s = Seconds("--window", f.window, 1);
  o.time_s = f.time.empty() ? static_cast<double>(clock.NowMs()) / 1000 : ParseTime(f.time);
  if (!f.ai_pod_label.empty() && !f.ai_pod_annotation.empty())
    throw InputError{"--ai-pod-label and --ai-pod-annotation: give one of them"};
  if (!f.ai_pod_label.empty())
    o.ai_pods = health::ParseSelector(health::AiPodSelector::Source::kLabel, f.ai_pod_label,
                                      "--ai-pod-label");
  if (!f.ai_pod_annotation.empty())
    o.ai_pods = health::ParseSelector(health::AiPodSelector::Source::kAnnotation,
                                      f.ai_pod_annotation, "--ai-pod-annotation");
  prom::ClientOptions co;
  co.url = f.prometheus;
  co.timeout_ms = static_cast<TimeMs>(Seconds("--timeout", f.timeout, 1) * 1000);
  co.bearer_token_file = f.bearer_token_file;
  co.ca_file = f.ca_file;
  prom::PrometheusClient client(co);
  const health::Report report =
      health::Evaluate([&client](const std::string& expr, double t,
                                 prom::QueryResult* out) { return client.Query(expr, t, out); },
                       o);
  std::cout << (f.output == "json" ? health::FormatJson(report) : health::FormatTable(report));
  return health::ExitCode(report);
}

}  // namespace

void AddHealth(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "health",
      "the golden metrics (LSCS, task migration rate, NVLink variance) from Prometheus against "
      "their "
      "thresholds: exit 0 healthy, 1 unhealthy, 2 cannot tell (Prometheus unreachable, no series)");
  auto f = std::make_shared<HealthFlags>();
  cmd->add_option("--prometheus", f->prometheus, "query API base URL, e.g. http://prometheus:9090")
      ->required();
  cmd->add_option("--window", f->window, "averaging window of LSCS and NVLink variance")
      ->capture_default_str();
  cmd->add_option("--output", f->output, "table or json")->capture_default_str();
  cmd->add_option("--time", f->time,
                  "evaluate at this time (Unix seconds or RFC 3339 UTC) instead of now");
  cmd->add_option("--timeout", f->timeout, "per-query timeout")->capture_default_str();
  cmd->add_option("--ai-pod-label", f->ai_pod_label,
                  "KEY=VALUE: AI pods carry this pod label (default tidal.io/workload=ai)");
  cmd->add_option("--ai-pod-annotation", f->ai_pod_annotation,
                  "KEY=VALUE: AI pods carry this annotation instead");
  cmd->add_option("--bearer-token-file", f->bearer_token_file,
                  "send this token (re-read on every query)");
  cmd->add_option("--ca-file", f->ca_file, "CA certificate for an https URL");
  cmd->callback([f]() {
    SystemClock clock;
    const int rc = RunHealth(*f, clock);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tidal::cli
