#include "tidal/sim/report.h"

#include <gtest/gtest.h>

namespace tidal::sim {
namespace {

TEST(Report, PercentileIsNearestRank) {
  struct Case {
    const char* name;
    std::vector<double> v;
    double p;
    double want;
  };
  const Case cases[] = {
      {"empty", {}, 50, 0},
      {"median of odd", {3, 1, 2}, 50, 2},
      {"p99 of 100 is the 99th",
       [] {
         std::vector<double> v;
         for (int i = 1; i <= 100; ++i) v.push_back(i);
         return v;
       }(),
       99, 99},
      {"p100 is the max", {5, 9, 1}, 100, 9},
      {"p0 is the min", {5, 9, 1}, 0, 1},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_DOUBLE_EQ(Percentile(tc.v, tc.p), tc.want);
  }
}

RunReport Small() {
  RunReport r;
  r.scenario = "s";
  r.cluster = "c";
  r.seed = 3;
  PolicyResult p;
  p.name = "k8s-default";
  p.nodes = {"n1"};
  p.waits_s = {1, 2, 3};
  p.jcts_s = {10, 20, 30};
  p.gpu_mem_util_peak["n1"] = 0.5;
  p.gpu_mem_util_mean["n1"] = 0.25;
  p.oom_kills = 1;
  p.starts = 4;
  p.starts_per_node["n1"] = 4;
  p.max_pods_per_gpu = 2;
  p.tasks = 3;
  p.completed = 3;
  r.policies.push_back(p);
  return r;
}

TEST(Report, JsonHasTheDocumentedFields) {
  const std::string j = RenderJson(Small());
  for (const char* key :
       {"\"scenario\": \"s\"", "\"seed\": 3", "\"name\": \"k8s-default\"", "\"wait_mean_s\": 2.000",
        "\"wait_p50_s\": 2.000", "\"wait_p99_s\": 3.000", "\"makespan_s\"", "\"oom_kills\": 1",
        "\"migration_rate\": 0.250000", "\"lscs_max\"", "\"lscs_settle_s\": null",
        "\"nvlink_variance_max\"", "\"gpu_mem_util_peak\": {\"n1\": 0.500000}",
        "\"tasks_per_hour\"", "\"starts_per_node\": {\"n1\": 4}", "\"max_pods_per_gpu\": 2"})
    EXPECT_NE(j.find(key), std::string::npos) << key;
}

TEST(Report, TableShowsEveryPolicyAndNode) {
  const std::string t = RenderTable(Small());
  EXPECT_NE(t.find("k8s-default"), std::string::npos);
  EXPECT_NE(t.find("n1"), std::string::npos);
  EXPECT_NE(t.find("25% / 50%"), std::string::npos);
  EXPECT_NE(t.find("25.00%"), std::string::npos);  // migration rate
}

// load-aware+stock-dp is longer than the 14 characters a column had: every
// column widens to it, so that the rows of the table still line up.
TEST(Report, TableColumnsFitTheLongestPolicyName) {
  RunReport r = Small();
  r.policies.push_back(r.policies[0]);
  r.policies.back().name = "load-aware+stock-dp";
  const std::string t = RenderTable(r);
  const std::size_t start = t.find("\n\n") + 2;  // after the scenario line
  const std::size_t end = t.find("\n\n", start);
  std::size_t lines = 0, width = 0;
  for (std::size_t at = start; at < end; ++lines) {
    const std::size_t eol = t.find('\n', at);
    if (lines == 0) width = eol - at;
    EXPECT_EQ(eol - at, width) << t.substr(at, eol - at);
    at = eol + 1;
  }
  EXPECT_GT(lines, 10u);
  EXPECT_EQ(width, 22 + 2 * (1 + std::string("load-aware+stock-dp").size()));
}

}  // namespace
}  // namespace tidal::sim
