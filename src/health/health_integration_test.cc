// `tidal health` as a process against a real Prometheus whose TSDB holds
// recorded series (written as OpenMetrics, imported with promtool), evaluated at
// the recorded times; the expected values are worked out by hand below.
//
// Timeline, one sample a minute from S = 2026-01-01T00:00:00Z:
//   [S, S+2h)    unhealthy. GPU memory (Σused/Σtotal): n1 (80+100)/200 = 0.9,
//                n2 0.2, n3 0.25 -> LSCS = sqrt(((0.45)² + (0.25)² + (0.2)²)/3)
//                = 0.318852. NVLink on n1: 0.125 and 0.5 -> variance 0.1875² =
//                0.03515625; n2 one GPU -> 0. AI pods a..d start at S+35m;
//                a is evicted at S+40m, b OOM-killed and restarted at S+45m; e,
//                not an AI pod, is evicted too -> 2 of 4 = 0.5.
//   [S+2h, S+4h] healthy. n1 0.5, n2 0.45, n3 0.55 -> LSCS = sqrt(0.005/3) =
//                0.040825; NVLink 0.25 and 0.25 -> 0. AI pods f, g, h start at
//                S+2h05m, none migrates; a's eviction and b's OOM kill are more
//                than an hour old by S+2h20m -> 0 of 3.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/process.h"

namespace tidal {
namespace {

using testing::TempDir;

constexpr long kS = 1'767'225'600;
constexpr long kEnd = kS + 4 * 3600;
constexpr long kUnhealthyAt = kS + 90 * 60;
constexpr long kHealthyAt = kS + 140 * 60;
constexpr long kEmptyAt = kS - 86'400;

struct Family {
  std::string name;
  std::vector<std::pair<std::string, std::function<double(long)>>>
      series;  // labels, value at t (NaN: absent)
};

std::string OpenMetrics(const std::vector<Family>& families) {
  std::string out;
  for (const auto& f : families) {
    out += "# TYPE " + f.name + " gauge\n";
    for (const auto& [labels, value] : f.series)
      for (long t = kS; t <= kEnd; t += 60) {
        const double v = value(t);
        if (std::isnan(v)) continue;
        char num[64];
        std::snprintf(num, sizeof num, "%.17g", v);
        out += f.name + "{" + labels + "} " + num + " " + std::to_string(t) + "\n";
      }
  }
  return out + "# EOF\n";
}

bool Healthy(long t) { return t >= kS + 2 * 3600; }
std::function<double(long)> Phase(double unhealthy, double healthy) {
  return [=](long t) { return Healthy(t) ? healthy : unhealthy; };
}
std::function<double(long)> Const(double v) {
  return [=](long) { return v; };
}
// Present from `from` on, 0 before `at` and 1 after (or `before`/`after`).
std::function<double(long)> Step(long from, long at, double before = 0, double after = 1) {
  return [=](long t) { return t < from ? std::nan("") : t < at ? before : after; };
}

std::vector<Family> Recorded() {
  const long pods1 = kS + 35 * 60, pods2 = kS + 125 * 60;
  Family start{"kube_pod_start_time", {}}, labels{"kube_pod_labels", {}},
      reason{"kube_pod_status_reason", {}};
  for (const char* p : {"a", "b", "c", "d", "e"}) {
    const std::string id = std::string("namespace=\"ml\",pod=\"") + p + "\"";
    start.series.emplace_back(id, Step(pods1, pods1, 0, static_cast<double>(pods1)));
    labels.series.emplace_back(
        id + (std::string(p) == "e" ? "" : ",label_tidal_io_workload=\"ai\""), Step(pods1, pods1));
    const bool evicted = std::string(p) == "a" || std::string(p) == "e";
    reason.series.emplace_back(id + ",reason=\"Evicted\"",
                               evicted ? Step(pods1, kS + 40 * 60) : Step(pods1, kEnd + 1));
  }
  for (const char* p : {"f", "g", "h"}) {
    const std::string id = std::string("namespace=\"ml\",pod=\"") + p + "\"";
    start.series.emplace_back(id, Step(pods2, pods2, 0, static_cast<double>(pods2)));
    labels.series.emplace_back(id + ",label_tidal_io_workload=\"ai\"", Step(pods2, pods2));
    reason.series.emplace_back(id + ",reason=\"Evicted\"", Step(pods2, kEnd + 1));
  }
  const std::string b = "namespace=\"ml\",pod=\"b\",container=\"main\"";
  return {
      {"ai_gpu_memory_used_bytes",
       {{"node=\"n1\",gpu_id=\"0\"", Phase(80, 50)},
        {"node=\"n1\",gpu_id=\"1\"", Phase(100, 50)},
        {"node=\"n2\",gpu_id=\"0\"", Phase(20, 45)},
        {"node=\"n3\",gpu_id=\"0\"", Phase(25, 55)}}},
      {"ai_gpu_memory_total_bytes",
       {{"node=\"n1\",gpu_id=\"0\"", Const(100)},
        {"node=\"n1\",gpu_id=\"1\"", Const(100)},
        {"node=\"n2\",gpu_id=\"0\"", Const(100)},
        {"node=\"n3\",gpu_id=\"0\"", Const(100)}}},
      {"ai_nvlink_bandwidth_utilization",
       {{"node=\"n1\",gpu_id=\"0\"", Phase(0.125, 0.25)},
        {"node=\"n1\",gpu_id=\"1\"", Phase(0.5, 0.25)},
        {"node=\"n2\",gpu_id=\"0\"", Const(0.3)}}},
      start,
      labels,
      reason,
      {"kube_pod_container_status_restarts_total", {{b, Step(pods1, kS + 45 * 60)}}},
      {"kube_pod_container_status_last_terminated_reason",
       {{b + ",reason=\"OOMKilled\"", Step(kS + 45 * 60, kS + 45 * 60)}}},
  };
}

class HealthAgainstPrometheus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(access(testing::kPrometheusBinary, X_OK), 0)
        << "prometheus is required (scripts/install-deps.sh)";
    ASSERT_EQ(access(testing::kPromtoolBinary, X_OK), 0)
        << "promtool is required (scripts/install-deps.sh)";
    dir_ = new TempDir();
    const std::string om = dir_->Write("recorded.om", OpenMetrics(Recorded()));
    const auto imported =
        testing::RunProgram({testing::kPromtoolBinary, "tsdb", "create-blocks-from", "openmetrics",
                             om, dir_->path() + "/data"},
                            *dir_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out;
    prom_ = new testing::PrometheusServer(*dir_, dir_->path() + "/data");
    ASSERT_TRUE(prom_->started());
    httplib::Client cli("127.0.0.1", prom_->port());
    ASSERT_TRUE(testing::Eventually([&] {
      auto r = cli.Get("/-/ready");
      return r && r->status == 200;
    })) << prom_->log();
  }
  static void TearDownTestSuite() {
    delete prom_;
    delete dir_;
    prom_ = nullptr;
    dir_ = nullptr;
  }

  struct Run {
    int exit_code;
    nlohmann::json json;
    std::string out;
  };
  static Run Health(const std::string& url, long at) {
    const auto r = testing::RunProgram({TIDAL_BINARY, "health", "--prometheus", url, "--time",
                                        std::to_string(at), "--output", "json", "--timeout", "5s"},
                                       *dir_);
    return {r.exit_code, nlohmann::json::parse(r.out, nullptr, false), r.out};
  }

  static TempDir* dir_;
  static testing::PrometheusServer* prom_;
};
TempDir* HealthAgainstPrometheus::dir_ = nullptr;
testing::PrometheusServer* HealthAgainstPrometheus::prom_ = nullptr;

TEST_F(HealthAgainstPrometheus, UnhealthyBurst) {
  const auto r = Health(prom_->url(), kUnhealthyAt);
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.json["overall"], "unhealthy");
  EXPECT_EQ(r.json["lscs"]["verdict"], "unhealthy");
  EXPECT_NEAR(r.json["lscs"]["value"].get<double>(), 0.318852, 1e-6);
  EXPECT_NEAR(r.json["lscs"]["nodes"]["n1"].get<double>(), 0.9, 1e-12);
  EXPECT_NEAR(r.json["lscs"]["nodes"]["n2"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(r.json["lscs"]["nodes"]["n3"].get<double>(), 0.25, 1e-12);
  // Steady for the whole half hour: one point a minute, all equal. (Prometheus
  // 2.x includes both ends of a subquery's range, 3.x only the last: 31 or 30.)
  ASSERT_GE(r.json["lscs"]["trend"].size(), 30u) << r.out;
  ASSERT_LE(r.json["lscs"]["trend"].size(), 31u) << r.out;
  for (const auto& p : r.json["lscs"]["trend"]) EXPECT_NEAR(p[1].get<double>(), 0.318852, 1e-6);
  EXPECT_NEAR(r.json["lscs"]["trend_slope_per_hour"].get<double>(), 0, 1e-9);
  EXPECT_EQ(r.json["migration"]["verdict"], "unhealthy");
  EXPECT_EQ(r.json["migration"]["started"], 4);
  EXPECT_EQ(r.json["migration"]["migrated"], 2);
  EXPECT_DOUBLE_EQ(r.json["migration"]["rate"].get<double>(), 0.5);
  EXPECT_EQ(r.json["nvlink"]["verdict"], "unhealthy");
  EXPECT_EQ(r.json["nvlink"]["worst_node"], "n1");
  EXPECT_NEAR(r.json["nvlink"]["nodes"]["n1"].get<double>(), 0.03515625, 1e-12);
  EXPECT_NEAR(r.json["nvlink"]["nodes"]["n2"].get<double>(), 0, 1e-12);
}

TEST_F(HealthAgainstPrometheus, HealthyAfterTheBurstDecays) {
  const auto r = Health(prom_->url(), kHealthyAt);
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.json["overall"], "healthy");
  EXPECT_NEAR(r.json["lscs"]["value"].get<double>(), std::sqrt(0.005 / 3), 1e-9);
  // The trend starts in the burst (S+1h50m) and ends healthy: decaying.
  const auto& trend = r.json["lscs"]["trend"];
  ASSERT_GE(trend.size(), 30u) << r.out;
  ASSERT_LE(trend.size(), 31u) << r.out;
  EXPECT_EQ(trend.back()[0].get<double>(), kHealthyAt);
  EXPECT_GE(trend.front()[0].get<double>(), kHealthyAt - 30 * 60);
  EXPECT_NEAR(trend.front()[1].get<double>(), 0.318852, 1e-6);
  EXPECT_NEAR(trend.back()[1].get<double>(), std::sqrt(0.005 / 3), 1e-9);
  EXPECT_LT(r.json["lscs"]["trend_slope_per_hour"].get<double>(), 0);
  EXPECT_EQ(r.json["migration"]["started"], 3);
  EXPECT_EQ(r.json["migration"]["migrated"], 0);
  EXPECT_EQ(r.json["migration"]["rate"], 0);
  EXPECT_EQ(r.json["nvlink"]["verdict"], "healthy");
  EXPECT_NEAR(r.json["nvlink"]["worst"].get<double>(), 0, 1e-12);
}

TEST_F(HealthAgainstPrometheus, NoSeriesCannotTell) {
  const auto r = Health(prom_->url(), kEmptyAt);
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.exit_code, 2) << r.out;
  for (const char* m : {"lscs", "migration", "nvlink"}) {
    SCOPED_TRACE(m);
    EXPECT_EQ(r.json[m]["verdict"], "unknown");
    EXPECT_NE(r.json[m]["detail"].get<std::string>().find("no series"), std::string::npos)
        << r.json[m]["detail"];
  }
}

TEST_F(HealthAgainstPrometheus, PrometheusDownCannotTell) {
  // A port nothing listens on: connection refused.
  const int port = testing::FreePort();
  const auto r = Health("http://127.0.0.1:" + std::to_string(port), kUnhealthyAt);
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.json["overall"], "unknown");
  EXPECT_NE(r.json["lscs"]["detail"].get<std::string>().find("query failed"), std::string::npos);
}

TEST_F(HealthAgainstPrometheus, TableOutputAndBadFlags) {
  const auto table = testing::RunProgram({TIDAL_BINARY, "health", "--prometheus", prom_->url(),
                                          "--time", std::to_string(kUnhealthyAt)},
                                         *dir_);
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_NE(table.out.find("31.89 %"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("overall: unhealthy"), std::string::npos) << table.out;
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* expect;
  };
  const Case cases[] = {
      {"bad window", {"--window", "five"}, "--window five"},
      {"bad output", {"--output", "xml"}, "--output xml"},
      {"bad time", {"--time", "yesterday"}, "--time yesterday"},
      {"bad selector", {"--ai-pod-label", "ai"}, "KEY=VALUE"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::vector<std::string> argv = {TIDAL_BINARY, "health", "--prometheus", prom_->url()};
    argv.insert(argv.end(), tc.args.begin(), tc.args.end());
    const auto r = testing::RunProgram(argv, *dir_);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(tc.expect), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal
