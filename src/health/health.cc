#include "tidal/health/health.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

namespace tidal::health {
namespace {

std::string Sanitize(std::string_view key) {
  // kube-state-metrics turns a Kubernetes key into a Prometheus label name this way.
  std::string out;
  for (char c : key) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out;
}

std::string QuotePromQL(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Runs one query; on failure returns false with `why` set, naming the query.
bool Run(const QueryFn& query, const std::string& expr, double time_s, prom::QueryResult* out,
         std::string* why) {
  Status st = query(expr, time_s, out);
  if (!st.ok()) {
    *why = "query failed: " + st.reason();
    return false;
  }
  return true;
}

// The one value of an aggregation without `by`; NaN when the result is empty.
double Single(const prom::QueryResult& r) {
  if (r.series.empty() || r.series.front().points.empty()) return kNaN;
  return r.series.front().points.back().value;
}

std::string LabelOr(const Labels& l, const std::string& key, const std::string& fallback) {
  auto it = l.find(key);
  return it == l.end() ? fallback : it->second;
}

std::string Percent(double v, int decimals = 1) {
  return std::isfinite(v) ? fmt::format("{:.{}f} %", 100 * v, decimals) : "n/a";
}

void JudgeLscs(const QueryFn& query, const Options& o, LscsResult* r) {
  prom::QueryResult now;
  if (!Run(query, NodeMemoryQuery(o.window_s), o.time_s, &now, &r->detail)) return;
  std::vector<double> values;
  for (const auto& s : now.series) {
    if (s.points.empty() || !std::isfinite(s.points.back().value)) continue;
    r->nodes[LabelOr(s.metric, "node", "")] = s.points.back().value;
    values.push_back(s.points.back().value);
  }
  if (values.empty()) {
    r->detail = "no series: ai_gpu_memory_used_bytes / ai_gpu_memory_total_bytes with a node label";
    return;
  }
  r->value = Lscs(values);
  r->verdict = r->value > o.lscs_max ? Verdict::kUnhealthy : Verdict::kHealthy;
  r->detail = fmt::format("{} nodes, {} (limit {})", values.size(), Percent(r->value),
                          Percent(o.lscs_max, 0));

  // The trend: the same per-node averages at each step of a subquery, LSCS
  // computed here for each step, so that the number is the one `golden.h` gives.
  prom::QueryResult trend;
  std::string why;
  const std::string sub = "(" + NodeMemoryQuery(o.window_s) + ")[" + PromDuration(o.trend_range_s) +
                          ":" + PromDuration(o.trend_step_s) + "]";
  if (!Run(query, sub, o.time_s, &trend, &why)) {
    r->detail += "; trend unknown (" + why + ")";
    return;
  }
  std::map<double, std::vector<double>> by_time;
  for (const auto& s : trend.series)
    for (const auto& p : s.points)
      if (std::isfinite(p.value)) by_time[p.time_s].push_back(p.value);
  for (const auto& [t, v] : by_time) r->trend.emplace_back(t, Lscs(v));
  if (r->trend.size() >= 2) {
    double mt = 0, mv = 0;
    for (const auto& [t, v] : r->trend) mt += t, mv += v;
    mt /= static_cast<double>(r->trend.size());
    mv /= static_cast<double>(r->trend.size());
    double num = 0, den = 0;
    for (const auto& [t, v] : r->trend) num += (t - mt) * (v - mv), den += (t - mt) * (t - mt);
    r->trend_slope_per_hour = den > 0 ? num / den * 3600 : 0;
    r->detail += fmt::format("; over {}: {} -> {} ({})", PromDuration(o.trend_range_s),
                             Percent(r->trend.front().second), Percent(r->trend.back().second),
                             r->trend_slope_per_hour < 0   ? "decaying"
                             : r->trend_slope_per_hour > 0 ? "rising"
                                                           : "flat");
  }
}

void JudgeMigration(const QueryFn& query, const Options& o, MigrationResult* r) {
  prom::QueryResult res;
  // Without kube-state-metrics, or without the AI label exported, a rate of 0
  // would be a lie: say that the rate cannot be told.
  if (!Run(query, "count(max_over_time(kube_pod_start_time[1h]))", o.time_s, &res, &r->detail))
    return;
  if (!std::isfinite(Single(res))) {
    r->detail = "no series: kube_pod_start_time (is kube-state-metrics scraped?)";
    return;
  }
  if (!Run(query, "count(max_over_time(" + AiPodSeries(o.ai_pods) + "[1h]))", o.time_s, &res,
           &r->detail))
    return;
  if (!std::isfinite(Single(res))) {
    r->detail = "no series: " + AiPodSeries(o.ai_pods) +
                " (no AI pod in the last hour, or kube-state-metrics does not export that " +
                (o.ai_pods.source == AiPodSelector::Source::kLabel ? "label" : "annotation") + ")";
    return;
  }
  if (!Run(query, StartedQuery(o.ai_pods), o.time_s, &res, &r->detail)) return;
  r->started = std::isfinite(Single(res)) ? Single(res) : 0;  // count() of nothing is no series
  if (!Run(query, MigratedQuery(o.ai_pods), o.time_s, &res, &r->detail)) return;
  r->migrated = std::isfinite(Single(res)) ? Single(res) : 0;
  r->rate = MigrationRate(r->migrated, r->started);
  r->verdict = r->rate >= o.migration_rate_max ? Verdict::kUnhealthy : Verdict::kHealthy;
  r->detail = fmt::format(
      "{:g} of {:g} AI pods started in the last hour evicted or OOM-killed: {} (limit {})",
      r->migrated, r->started, Percent(r->rate, 2), Percent(o.migration_rate_max, 1));
}

void JudgeNvlink(const QueryFn& query, const Options& o, NvlinkResult* r) {
  prom::QueryResult res;
  if (!Run(query, NvlinkGpuQuery(o.window_s), o.time_s, &res, &r->detail)) return;
  std::map<std::string, std::vector<double>> by_node;
  for (const auto& s : res.series)
    if (!s.points.empty() && std::isfinite(s.points.back().value))
      by_node[LabelOr(s.metric, "node", "")].push_back(s.points.back().value);
  if (by_node.empty()) {
    // No utilisation at all: a cluster without NVLink (PCIe GPUs) is not unhealthy.
    prom::QueryResult links, gpus;
    if (!Run(query, "count(ai_gpu_nvlink_active_links > 0)", o.time_s, &links, &r->detail)) return;
    if (!Run(query, "count(ai_gpu_memory_total_bytes)", o.time_s, &gpus, &r->detail)) return;
    if (!std::isfinite(Single(links)) && std::isfinite(Single(gpus))) {
      r->applicable = false;
      r->verdict = Verdict::kHealthy;
      r->detail = fmt::format("no NVLink: none of {:g} GPUs reports an active link", Single(gpus));
      return;
    }
    r->detail = "no series: ai_nvlink_bandwidth_utilization";
    return;
  }
  for (const auto& [node, values] : by_node) {
    const double v = NvlinkVariance(values);
    r->nodes[node] = v;
    if (!std::isfinite(r->worst) || v > r->worst) r->worst = v, r->worst_node = node;
  }
  r->verdict = r->worst > o.nvlink_variance_max ? Verdict::kUnhealthy : Verdict::kHealthy;
  int over = 0;
  for (const auto& [node, v] : r->nodes) over += v > o.nvlink_variance_max;
  r->detail = fmt::format("{} nodes, {} over {:g}; worst {} at {:.4f}", r->nodes.size(), over,
                          o.nvlink_variance_max, r->worst_node, r->worst);
}

nlohmann::json Number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

AiPodSelector ParseSelector(AiPodSelector::Source source, const std::string& text,
                            std::string_view flag) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError{std::string(flag) + " " + text +
                     ": expected KEY=VALUE, e.g. tidal.io/workload=ai"};
  return AiPodSelector{source, text.substr(0, eq), text.substr(eq + 1)};
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kHealthy:
      return "healthy";
    case Verdict::kUnhealthy:
      return "unhealthy";
    case Verdict::kUnknown:
      break;
  }
  return "unknown";
}

std::string PromDuration(double seconds) {
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::string NodeMemoryQuery(double window_s) {
  const std::string w = PromDuration(window_s);
  return "sum by (node) (avg_over_time(ai_gpu_memory_used_bytes[" + w +
         "])) / sum by (node) (avg_over_time(ai_gpu_memory_total_bytes[" + w + "]))";
}

std::string NvlinkGpuQuery(double window_s) {
  return "avg_over_time(ai_nvlink_bandwidth_utilization[" + PromDuration(window_s) + "])";
}

std::string AiPodSeries(const AiPodSelector& s) {
  const bool label = s.source == AiPodSelector::Source::kLabel;
  return std::string(label ? "kube_pod_labels{label_" : "kube_pod_annotations{annotation_") +
         Sanitize(s.key) + "=" + QuotePromQL(s.value) + "}";
}

std::string StartedQuery(const AiPodSelector& s) {
  return "count(max by (namespace, pod) (max_over_time(kube_pod_start_time[1h])) > time() - 3600 "
         "and on (namespace, "
         "pod) max by (namespace, pod) (max_over_time(" +
         AiPodSeries(s) + "[1h])))";
}

std::string MigratedQuery(const AiPodSelector& s) {
  return "count(max by (namespace, pod) ("
         "(max_over_time(kube_pod_status_reason{reason=\"Evicted\"}[1h]) == 1 unless on "
         "(namespace, pod) "
         "kube_pod_status_reason{reason=\"Evicted\"} offset 1h == 1) "
         "or (max_over_time(kube_pod_container_status_terminated_reason{reason=\"OOMKilled\"}[1h]) "
         "== 1 unless on "
         "(namespace, pod, container) "
         "kube_pod_container_status_terminated_reason{reason=\"OOMKilled\"} offset 1h == 1) "
         "or (increase(kube_pod_container_status_restarts_total[1h]) > 0 and on (namespace, pod, "
         "container) "
         "max_over_time(kube_pod_container_status_last_terminated_reason{reason=\"OOMKilled\"}[1h])"
         " == 1)"
         ") and on (namespace, pod) max by (namespace, pod) (max_over_time(" +
         AiPodSeries(s) + "[1h])))";
}

Report Evaluate(const QueryFn& query, const Options& options) {
  Report r;
  r.time_s = options.time_s;
  r.options = options;
  JudgeLscs(query, options, &r.lscs);
  JudgeMigration(query, options, &r.migration);
  JudgeNvlink(query, options, &r.nvlink);
  const Verdict all[] = {r.lscs.verdict, r.migration.verdict, r.nvlink.verdict};
  if (std::find(std::begin(all), std::end(all), Verdict::kUnhealthy) != std::end(all))
    r.overall = Verdict::kUnhealthy;
  else if (std::find(std::begin(all), std::end(all), Verdict::kUnknown) != std::end(all))
    r.overall = Verdict::kUnknown;
  else
    r.overall = Verdict::kHealthy;
  return r;
}

int ExitCode(const Report& report) {
  switch (report.overall) {
    case Verdict::kHealthy:
      return 0;
    case Verdict::kUnhealthy:
      return 1;
    case Verdict::kUnknown:
      break;
  }
  return 2;
}

std::string FormatTable(const Report& r) {
  std::string out = fmt::format("{:<22} {:>10} {:>10}  {:<10} {}\n", "metric", "value", "limit",
                                "verdict", "detail");
  auto line = [&](std::string_view name, std::string value, std::string limit, Verdict v,
                  const std::string& d) {
    out += fmt::format("{:<22} {:>10} {:>10}  {:<10} {}\n", name, value, limit, VerdictName(v), d);
  };
  line("LSCS", Percent(r.lscs.value, 2), "<= " + Percent(r.options.lscs_max, 0), r.lscs.verdict,
       r.lscs.detail);
  line("task migration rate", Percent(r.migration.rate, 2),
       "< " + Percent(r.options.migration_rate_max, 1), r.migration.verdict, r.migration.detail);
  line("NVLink variance (max)",
       std::isfinite(r.nvlink.worst) ? fmt::format("{:.4f}", r.nvlink.worst) : "n/a",
       fmt::format("<= {:g}", r.options.nvlink_variance_max), r.nvlink.verdict, r.nvlink.detail);
  for (const auto& [node, v] : r.nvlink.nodes)
    out += fmt::format("  {:<20} {:>10.4f} {:>10}  {}\n", node, v, "",
                       v > r.options.nvlink_variance_max ? "unhealthy" : "healthy");
  out += fmt::format("overall: {}\n", VerdictName(r.overall));
  return out;
}

std::string FormatJson(const Report& r) {
  nlohmann::json j;
  j["time"] = r.time_s;
  j["overall"] = std::string(VerdictName(r.overall));
  j["exit_code"] = ExitCode(r);
  auto& l = j["lscs"];
  l["verdict"] = std::string(VerdictName(r.lscs.verdict));
  l["value"] = Number(r.lscs.value);
  l["threshold"] = r.options.lscs_max;
  l["window_seconds"] = r.options.window_s;
  l["nodes"] = nlohmann::json::object();
  for (const auto& [n, v] : r.lscs.nodes) l["nodes"][n] = Number(v);
  l["trend"] = nlohmann::json::array();
  for (const auto& [t, v] : r.lscs.trend) l["trend"].push_back({t, Number(v)});
  l["trend_slope_per_hour"] = Number(r.lscs.trend_slope_per_hour);
  l["detail"] = r.lscs.detail;
  auto& m = j["migration"];
  m["verdict"] = std::string(VerdictName(r.migration.verdict));
  m["rate"] = Number(r.migration.rate);
  m["migrated"] = Number(r.migration.migrated);
  m["started"] = Number(r.migration.started);
  m["threshold"] = r.options.migration_rate_max;
  m["detail"] = r.migration.detail;
  auto& n = j["nvlink"];
  n["verdict"] = std::string(VerdictName(r.nvlink.verdict));
  n["applicable"] = r.nvlink.applicable;
  n["worst"] = Number(r.nvlink.worst);
  n["worst_node"] = r.nvlink.worst_node;
  n["threshold"] = r.options.nvlink_variance_max;
  n["nodes"] = nlohmann::json::object();
  for (const auto& [node, v] : r.nvlink.nodes) n["nodes"][node] = Number(v);
  n["detail"] = r.nvlink.detail;
  return j.dump(2) + "\n";
}

}  // namespace tidal::health
