#include "tidal/health/health.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace tidal::health {
namespace {

constexpr double kT = 1'767'225'600;  // 2026-01-01T00:00:00Z

prom::Series Sample(Labels labels, double v, double t = kT) {
  return prom::Series{std::move(labels), {{t, v}}};
}

// A Prometheus stand-in: answers known expressions, an empty vector otherwise
// (what Prometheus says when there are no series), or an error for all.
struct FakePrometheus {
  std::map<std::string, prom::QueryResult> answers;
  std::string down;  // when set, every query fails with this reason
  std::vector<std::string> asked;

  void Vector(const std::string& expr, std::vector<prom::Series> series) {
    answers[expr] = prom::QueryResult{prom::ResultType::kVector, std::move(series), "", {}};
  }
  void Scalar(const std::string& expr, double v) { Vector(expr, {Sample({}, v)}); }
  QueryFn Fn() {
    return [this](const std::string& expr, double t, prom::QueryResult* out) {
      EXPECT_EQ(t, kT) << expr;
      asked.push_back(expr);
      if (!down.empty()) return Status::Error(down);
      auto it = answers.find(expr);
      *out = it == answers.end() ? prom::QueryResult{} : it->second;
      return Status();
    };
  }
};

std::string TrendQuery() { return "(" + NodeMemoryQuery(300) + ")[30m:1m]"; }

// A healthy cluster: two nodes at 0.5 and 0.4 (LSCS 0.05), 0 of 10 AI pods
// migrated, NVLink variance 0.0025 and 0 on the two nodes.
void Healthy(FakePrometheus& p) {
  const AiPodSelector ai;
  p.Vector(NodeMemoryQuery(300), {Sample({{"node", "n1"}}, 0.5), Sample({{"node", "n2"}}, 0.4)});
  p.Scalar("count(max_over_time(kube_pod_start_time[1h]))", 12);
  p.Scalar("count(max_over_time(" + AiPodSeries(ai) + "[1h]))", 10);
  p.Scalar(StartedQuery(ai), 10);
  p.Vector(NvlinkGpuQuery(300), {Sample({{"node", "n1"}, {"gpu_id", "0"}}, 0.2),
                                 Sample({{"node", "n1"}, {"gpu_id", "1"}}, 0.3),
                                 Sample({{"node", "n2"}, {"gpu_id", "0"}}, 0.1)});
}

Options At() {
  Options o;
  o.time_s = kT;
  return o;
}

TEST(Health, VerdictsAndExitCodes) {
  struct Case {
    const char* name;
    std::function<void(FakePrometheus&)> setup;
    Verdict lscs, migration, nvlink;
    int exit_code;
  };
  const AiPodSelector ai;
  const Case cases[] = {
      {"healthy", [](FakePrometheus&) {}, Verdict::kHealthy, Verdict::kHealthy, Verdict::kHealthy,
       0},
      {"LSCS above 15 %",
       [](FakePrometheus& p) {
         p.Vector(NodeMemoryQuery(300),
                  {Sample({{"node", "n1"}}, 0.9), Sample({{"node", "n2"}}, 0.2)});
       },
       Verdict::kUnhealthy, Verdict::kHealthy, Verdict::kHealthy, 1},
      {"LSCS 12.5 % is under the limit",
       [](FakePrometheus& p) {
         p.Vector(NodeMemoryQuery(300),
                  {Sample({{"node", "n1"}}, 0.625), Sample({{"node", "n2"}}, 0.375)});
       },
       Verdict::kHealthy, Verdict::kHealthy, Verdict::kHealthy, 0},
      {"one of 10 migrated is 10 %", [&](FakePrometheus& p) { p.Scalar(MigratedQuery(ai), 1); },
       Verdict::kHealthy, Verdict::kUnhealthy, Verdict::kHealthy, 1},
      {"no AI pod started in the hour is a rate of 0",
       [&](FakePrometheus& p) { p.answers.erase(StartedQuery(ai)); }, Verdict::kHealthy,
       Verdict::kHealthy, Verdict::kHealthy, 0},
      {"no kube-state-metrics: cannot tell",
       [](FakePrometheus& p) { p.answers.erase("count(max_over_time(kube_pod_start_time[1h]))"); },
       Verdict::kHealthy, Verdict::kUnknown, Verdict::kHealthy, 2},
      {"the AI label is not exported: cannot tell",
       [&](FakePrometheus& p) {
         p.answers.erase("count(max_over_time(" + AiPodSeries(ai) + "[1h]))");
       },
       Verdict::kHealthy, Verdict::kUnknown, Verdict::kHealthy, 2},
      {"NVLink variance above 0.02 on one node",
       [](FakePrometheus& p) {
         p.Vector(NvlinkGpuQuery(300), {Sample({{"node", "n1"}, {"gpu_id", "0"}}, 0.1),
                                        Sample({{"node", "n1"}, {"gpu_id", "1"}}, 0.5)});
       },
       Verdict::kHealthy, Verdict::kHealthy, Verdict::kUnhealthy, 1},
      {"no NVLink utilisation but active links: cannot tell",
       [](FakePrometheus& p) {
         p.answers.erase(NvlinkGpuQuery(300));
         p.Scalar("count(ai_gpu_nvlink_active_links > 0)", 4);
         p.Scalar("count(ai_gpu_memory_total_bytes)", 8);
       },
       Verdict::kHealthy, Verdict::kHealthy, Verdict::kUnknown, 2},
      {"PCIe-only GPUs: NVLink does not apply",
       [](FakePrometheus& p) {
         p.answers.erase(NvlinkGpuQuery(300));
         p.Scalar("count(ai_gpu_memory_total_bytes)", 8);
       },
       Verdict::kHealthy, Verdict::kHealthy, Verdict::kHealthy, 0},
      {"no GPU series at all: cannot tell",
       [](FakePrometheus& p) {
         p.answers.erase(NodeMemoryQuery(300));
         p.answers.erase(NvlinkGpuQuery(300));
       },
       Verdict::kUnknown, Verdict::kHealthy, Verdict::kUnknown, 2},
      {"unhealthy wins over unknown",
       [](FakePrometheus& p) {
         p.Vector(NodeMemoryQuery(300),
                  {Sample({{"node", "n1"}}, 0.9), Sample({{"node", "n2"}}, 0.2)});
         p.answers.erase(NvlinkGpuQuery(300));
       },
       Verdict::kUnhealthy, Verdict::kHealthy, Verdict::kUnknown, 1},
      {"NaN utilisation (a node with 0 total bytes) is ignored",
       [](FakePrometheus& p) {
         p.Vector(NodeMemoryQuery(300),
                  {Sample({{"node", "n1"}}, 0.5), Sample({{"node", "n2"}}, 0.4),
                   Sample({{"node", "n3"}}, std::nan(""))});
       },
       Verdict::kHealthy, Verdict::kHealthy, Verdict::kHealthy, 0},
      {"Prometheus down: cannot tell", [](FakePrometheus& p) { p.down = "connection refused"; },
       Verdict::kUnknown, Verdict::kUnknown, Verdict::kUnknown, 2},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    FakePrometheus p;
    Healthy(p);
    tc.setup(p);
    const Report r = Evaluate(p.Fn(), At());
    EXPECT_EQ(VerdictName(r.lscs.verdict), VerdictName(tc.lscs)) << r.lscs.detail;
    EXPECT_EQ(VerdictName(r.migration.verdict), VerdictName(tc.migration)) << r.migration.detail;
    EXPECT_EQ(VerdictName(r.nvlink.verdict), VerdictName(tc.nvlink)) << r.nvlink.detail;
    EXPECT_EQ(ExitCode(r), tc.exit_code);
  }
}

TEST(Health, ValuesComeFromTheGoldenFunctions) {
  FakePrometheus p;
  Healthy(p);
  p.Vector(NodeMemoryQuery(300), {Sample({{"node", "n1"}}, 0.9), Sample({{"node", "n2"}}, 0.2),
                                  Sample({{"node", "n3"}}, 0.25)});
  p.Scalar(StartedQuery(AiPodSelector{}), 400);
  p.Scalar(MigratedQuery(AiPodSelector{}), 1);
  const Report r = Evaluate(p.Fn(), At());
  const double nodes[] = {0.9, 0.2, 0.25};
  EXPECT_DOUBLE_EQ(r.lscs.value, Lscs(nodes));
  EXPECT_NEAR(r.lscs.value, 0.31885, 1e-5);  // mean 0.45; sqrt((0.2025 + 0.0625 + 0.04) / 3)
  EXPECT_EQ(r.lscs.nodes.size(), 3u);
  EXPECT_DOUBLE_EQ(r.migration.rate, 0.0025);
  EXPECT_EQ(VerdictName(r.migration.verdict), "healthy");  // 0.25 % < 0.5 %
  EXPECT_NEAR(r.nvlink.nodes.at("n1"), 0.0025, 1e-12);     // 0.2 and 0.3 around 0.25
  EXPECT_EQ(r.nvlink.nodes.at("n2"), 0);
  EXPECT_EQ(r.nvlink.worst_node, "n1");
}

TEST(Health, TrendIsLscsAtEachSubqueryStep) {
  FakePrometheus p;
  Healthy(p);
  // Two nodes converging: at t-120 0.9/0.1 (0.4), t-60 0.7/0.3 (0.2), t 0.5/0.5 (0).
  prom::QueryResult m{prom::ResultType::kMatrix, {}, "", {}};
  m.series.push_back({{{"node", "n1"}}, {{kT - 120, 0.9}, {kT - 60, 0.7}, {kT, 0.5}}});
  m.series.push_back({{{"node", "n2"}}, {{kT - 120, 0.1}, {kT - 60, 0.3}, {kT, 0.5}}});
  p.answers[TrendQuery()] = m;
  const Report r = Evaluate(p.Fn(), At());
  ASSERT_EQ(r.lscs.trend.size(), 3u);
  EXPECT_NEAR(r.lscs.trend[0].second, 0.4, 1e-12);
  EXPECT_NEAR(r.lscs.trend[1].second, 0.2, 1e-12);
  EXPECT_NEAR(r.lscs.trend[2].second, 0.0, 1e-12);
  EXPECT_NEAR(r.lscs.trend_slope_per_hour, -0.2 / 60 * 3600, 1e-9);  // -0.2 per minute
  EXPECT_NE(r.lscs.detail.find("decaying"), std::string::npos) << r.lscs.detail;
  EXPECT_NE(std::find(p.asked.begin(), p.asked.end(), TrendQuery()), p.asked.end());
}

TEST(Health, WindowAndSelectorReachTheQueries) {
  FakePrometheus p;
  Options o = At();
  o.window_s = 600;
  o.ai_pods = ParseSelector(AiPodSelector::Source::kAnnotation, "example.com/kind=\"train\"",
                            "--ai-pod-annotation");
  p.Scalar("count(max_over_time(kube_pod_start_time[1h]))", 3);
  Evaluate(p.Fn(), o);
  auto asked = [&](const std::string& q) {
    return std::find(p.asked.begin(), p.asked.end(), q) != p.asked.end();
  };
  EXPECT_TRUE(
      asked("sum by (node) (avg_over_time(ai_gpu_memory_used_bytes[10m])) / sum by (node) "
            "(avg_over_time(ai_gpu_memory_total_bytes[10m]))"));
  EXPECT_TRUE(asked("avg_over_time(ai_nvlink_bandwidth_utilization[10m])"));
  // kube-state-metrics' label name for the key; the value quoted for PromQL.
  EXPECT_EQ(AiPodSeries(o.ai_pods),
            R"(kube_pod_annotations{annotation_example_com_kind="\"train\""})");
  EXPECT_TRUE(asked("count(max_over_time(" + AiPodSeries(o.ai_pods) + "[1h]))"));
}

TEST(Health, SelectorAndDurationParsing) {
  EXPECT_EQ(PromDuration(300), "5m");
  EXPECT_EQ(PromDuration(3600), "1h");
  EXPECT_EQ(PromDuration(90), "90s");
  const auto s = ParseSelector(AiPodSelector::Source::kLabel, "team=ml=x", "--ai-pod-label");
  EXPECT_EQ(s.key, "team");
  EXPECT_EQ(s.value, "ml=x");
  for (const char* bad : {"team", "=ml", ""}) {
    SCOPED_TRACE(bad);
    try {
      ParseSelector(AiPodSelector::Source::kLabel, bad, "--ai-pod-label");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(e.message.find("--ai-pod-label"), std::string::npos);
      EXPECT_NE(e.message.find("KEY=VALUE"), std::string::npos);
    }
  }
}

std::string NoSpace(std::string s) {
  s.erase(std::remove_if(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); }),
          s.end());
  return s;
}

TEST(Health, QueriesAreTheRecordingRules) {
  // The alerts and `tidal health` must measure the same thing.
  const YAML::Node rules =
      YAML::LoadFile(std::string(TIDAL_SOURCE_DIR) + "/deploy/monitoring/plain/tidal.rules.yaml");
  std::map<std::string, std::string> record;
  for (const auto& g : rules["groups"])
    for (const auto& r : g["rules"])
      if (r["record"]) record[r["record"].as<std::string>()] = NoSpace(r["expr"].as<std::string>());
  const AiPodSelector ai;
  EXPECT_EQ(record["node:ai_gpu_memory_utilization:avg5m"], NoSpace(NodeMemoryQuery(300)));
  EXPECT_EQ(record["node:ai_nvlink_bandwidth_utilization:stdvar_avg5m"],
            NoSpace("stdvar by (node) (" + NvlinkGpuQuery(300) + ")"));
  EXPECT_EQ(record["cluster:tidal_ai_pods_started:count1h"], NoSpace(StartedQuery(ai)));
  EXPECT_EQ(record["cluster:tidal_ai_pods_migrated:count1h"], NoSpace(MigratedQuery(ai)));
}

TEST(Health, JsonCarriesEveryNumber) {
  FakePrometheus p;
  Healthy(p);
  p.Scalar(MigratedQuery(AiPodSelector{}), 1);
  const Report r = Evaluate(p.Fn(), At());
  const auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_EQ(j["overall"], "unhealthy");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_NEAR(j["lscs"]["value"].get<double>(), 0.05, 1e-12);
  EXPECT_EQ(j["migration"]["migrated"], 1);
  EXPECT_EQ(j["migration"]["started"], 10);
  EXPECT_NEAR(j["migration"]["rate"].get<double>(), 0.1, 1e-12);
  EXPECT_NEAR(j["nvlink"]["nodes"]["n1"].get<double>(), 0.0025, 1e-12);
  // Unknown values are null, not 0.
  FakePrometheus down;
  down.down = "connection refused";
  const auto u = nlohmann::json::parse(FormatJson(Evaluate(down.Fn(), At())));
  EXPECT_TRUE(u["lscs"]["value"].is_null());
  EXPECT_TRUE(u["migration"]["rate"].is_null());
  EXPECT_NE(u["lscs"]["detail"].get<std::string>().find("connection refused"), std::string::npos);
  const std::string table = FormatTable(r);
  EXPECT_NE(table.find("overall: unhealthy"), std::string::npos) << table;
}

}  // namespace
}  // namespace tidal::health
