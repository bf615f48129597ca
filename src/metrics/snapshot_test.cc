#include "tidal/metrics/snapshot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tidal {
namespace {

prom::Series S(const std::string& name, Labels labels, double v) {
  labels["__name__"] = name;
  return prom::Series{std::move(labels), {{100.0, v}}};
}

prom::QueryResult Vector(std::vector<prom::Series> series) {
  prom::QueryResult r;
  r.series = std::move(series);
  return r;
}

const double kGiB = 1024.0 * 1024 * 1024;

std::vector<prom::Series> TwoGpuNode(const std::string& node) {
  return {
      S("ai_gpu_memory_used_bytes",
        {{"node", node}, {"gpu_id", "0"}, {"uuid", "GPU-a"}, {"model", "A100"}}, 10 * kGiB),
      S("ai_gpu_memory_total_bytes", {{"node", node}, {"gpu_id", "0"}}, 80 * kGiB),
      S("ai_gpu_memory_used_bytes", {{"node", node}, {"gpu_id", "1"}}, 40 * kGiB),
      S("ai_gpu_memory_total_bytes", {{"node", node}, {"gpu_id", "1"}}, 80 * kGiB),
      S("ai_gpu_nvlink_peer_links", {{"node", node}, {"gpu_id", "0"}, {"peer_gpu_id", "1"}}, 12),
      S("ai_gpu_nvlink_peer_links", {{"node", node}, {"gpu_id", "1"}, {"peer_gpu_id", "0"}}, 12),
      S("ai_nvlink_bandwidth_utilization", {{"node", node}, {"gpu_id", "1"}}, 0.4),
      S("ai_nvlink_competition_index", {{"node", node}}, 0.25),
      S("ai_storage_await_seconds", {{"node", node}, {"device", "sda"}}, 0.012),
      S("ai_storage_await_seconds", {{"node", node}, {"device", "nvme0n1"}}, 0.04283)};
}

prom::QueryResult Times(const std::vector<std::string>& nodes, double t_s) {
  prom::QueryResult r;
  for (const auto& n : nodes) r.series.push_back(prom::Series{{{"node", n}}, {{t_s, t_s}}});
  return r;
}

TEST(Snapshot, JoinsTheAgentSeriesByNode) {
  const MetricsSnapshot s =
      BuildSnapshot(Vector(TwoGpuNode("n1")), Times({"n1"}, 1700000000.5), "node", 42);
  EXPECT_EQ(s.fetched_at_ms, 42);
  ASSERT_EQ(s.nodes.count("n1"), 1u);
  const NodeMetrics& m = s.nodes.at("n1");
  EXPECT_TRUE(m.usable) << (m.problems.empty() ? "" : m.problems[0]);
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[0].uuid, "GPU-a");
  EXPECT_EQ(m.gpus[0].model, "A100");
  EXPECT_EQ(m.gpus[0].memory_used, 10LL << 30);
  EXPECT_EQ(m.gpus[1].memory_total, 80LL << 30);
  ASSERT_EQ(m.gpus[0].nvlink_peers.size(), 1u);
  EXPECT_EQ(m.gpus[0].nvlink_peers[0], (NvlinkPeer{1, 12}));
  EXPECT_DOUBLE_EQ(m.gpus[1].nvlink_utilization, 0.4);
  EXPECT_DOUBLE_EQ(m.nvlink_competition, 0.25);
  // The agent reports seconds; the policy reads ms.
  EXPECT_DOUBLE_EQ(m.storage_await_ms, 42.83) << "the worst device decides";
  EXPECT_EQ(m.sample_time_ms, 1700000000500);
}

TEST(Snapshot, DoubtfulReadingsMakeTheNodeUnknown) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    std::vector<prom::Series> extra;  // added to a good node
    bool usable;
    const char* problem;
  };
  const Case cases[] = {
      {"NaN used",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "0"}}, nan)},
       false,
       "finite"},
      {"+Inf await",
       {S("ai_storage_await_seconds", {{"node", "n1"}, {"device", "sdb"}}, inf)},
       false,
       "finite"},
      {"NaN await",
       {S("ai_storage_await_seconds", {{"node", "n1"}, {"device", "sdb"}}, nan)},
       false,
       "finite"},
      {"negative await",
       {S("ai_storage_await_seconds", {{"node", "n1"}, {"device", "sdb"}}, -0.001)},
       false,
       "finite"},
      {"an await that overflows in ms",
       {S("ai_storage_await_seconds", {{"node", "n1"}, {"device", "sdb"}}, 1e306)},
       false,
       "too large"},
      {"negative total",
       {S("ai_gpu_memory_total_bytes", {{"node", "n1"}, {"gpu_id", "1"}}, -1)},
       false,
       "finite"},
      {"duplicates that agree (two scrape jobs)",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "0"}, {"job", "other"}},
          10 * kGiB)},
       true,
       ""},
      {"duplicates that disagree",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "0"}, {"job", "other"}},
          70 * kGiB)},
       false,
       "disagree"},
      {"a GPU with used but no total",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 1)},
       false,
       "GPU 2: ai_gpu_memory_total_bytes is missing"},
      {"gpu_id not a number",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "x"}}, 1)},
       false,
       "gpu_id"},
      // As the other sources' path checks (sources.cc): a GPU whose used memory
      // exceeds its total, or whose total is no GPU's, is a doubtful reading.
      {"used above total",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 90 * kGiB),
        S("ai_gpu_memory_total_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 80 * kGiB)},
       false,
       "GPU 2: used 92160 MiB exceeds total 81920 MiB"},
      {"a total of 0 (it would read as idle)",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 0),
        S("ai_gpu_memory_total_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 0)},
       false,
       "GPU 2: total memory 0 MiB: expected at least 1 MiB"},
      {"a total beyond any byte count",
       {S("ai_gpu_memory_used_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 0),
        S("ai_gpu_memory_total_bytes", {{"node", "n1"}, {"gpu_id", "2"}}, 1e30)},
       false,
       "GPU 2: total memory"},
      // A peer link count beyond an int was converted regardless (undefined).
      {"a peer link count beyond any NVLink",
       {S("ai_gpu_nvlink_peer_links", {{"node", "n1"}, {"gpu_id", "0"}, {"peer_gpu_id", "1"}},
          1e30)},
       false,
       "expected a link count 0..65536"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto series = TwoGpuNode("n1");
    series.insert(series.end(), tc.extra.begin(), tc.extra.end());
    const MetricsSnapshot s = BuildSnapshot(Vector(series), Times({"n1"}, 1), "node", 0);
    const NodeMetrics& m = s.nodes.at("n1");
    EXPECT_EQ(m.usable, tc.usable);
    if (!tc.usable) {
      ASSERT_FALSE(m.problems.empty());
      EXPECT_NE(m.problems[0].find(tc.problem), std::string::npos) << m.problems[0];
    }
  }
}

TEST(Snapshot, NodeLabelIsConfigurableAndUnlabelledSeriesAreReported) {
  auto series = TwoGpuNode("n1");
  for (auto& s : series) {
    s.metric["kubernetes_node"] = s.metric["node"];
    s.metric.erase("node");
  }
  series.push_back(S("ai_gpu_memory_used_bytes", {{"gpu_id", "0"}}, 1));
  prom::QueryResult times;
  times.series.push_back(prom::Series{{{"kubernetes_node", "n1"}}, {{1, 1}}});
  const MetricsSnapshot s = BuildSnapshot(Vector(series), times, "kubernetes_node", 0);
  EXPECT_TRUE(s.nodes.at("n1").usable);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_NE(s.problems[0].find("1 tidal-agent series have no \"kubernetes_node\" label"),
            std::string::npos)
      << s.problems[0];
}

TEST(Snapshot, NoSampleTimeOrNoGpuSeriesIsUnusable) {
  MetricsSnapshot s = BuildSnapshot(Vector(TwoGpuNode("n1")), Times({}, 0), "node", 0);
  EXPECT_FALSE(s.nodes.at("n1").usable);
  EXPECT_EQ(s.nodes.at("n1").problems,
            std::vector<std::string>{
                "no sample time from tidal-agent (ai_collector_up is missing for the node)"});
  s = BuildSnapshot(
      Vector({S("ai_storage_await_seconds", {{"node", "disk-only"}, {"device", "sda"}}, 0.003)}),
      Times({"disk-only"}, 1), "node", 0);
  EXPECT_FALSE(s.nodes.at("disk-only").usable);
  EXPECT_EQ(s.nodes.at("disk-only").problems, std::vector<std::string>{"no GPU memory series"});
}

// The agent publishes peer series only where NVML reports NVLink: without them
// its GPUs are unlinked, said by the agent (no model table is consulted, no note).
TEST(Snapshot, WithoutPeerSeriesTheAgentsGpusAreUnlinked) {
  auto series = TwoGpuNode("n1");
  std::erase_if(series, [](const prom::Series& x) {
    return x.metric.at("__name__") == "ai_gpu_nvlink_peer_links";
  });
  const MetricsSnapshot s = BuildSnapshot(Vector(series), Times({"n1"}, 1), "node", 0);
  const NodeMetrics& m = s.nodes.at("n1");
  EXPECT_TRUE(m.usable);
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_TRUE(m.gpus[0].nvlink_peers.empty());
  EXPECT_EQ(m.sources.topology, "tidal-agent");
  EXPECT_TRUE(m.notes.empty()) << m.notes[0];
}

TEST(Snapshot, ASampleTimeThatIsNoUnixTimeMakesTheNodeUnknown) {
  const struct {
    const char* name;
    double t_s;
  } cases[] = {{"zero", 0},
               {"under a millisecond", 0.0004},
               {"negative", -5},
               {"not a number", std::nan("")},
               {"infinite", HUGE_VAL},
               {"past the year 5000", 1e300}};
  for (const auto& c : cases) {
    const MetricsSnapshot s =
        BuildSnapshot(Vector(TwoGpuNode("n1")), Times({"n1"}, c.t_s), "node", 0);
    const NodeMetrics& m = s.nodes.at("n1");
    EXPECT_FALSE(m.usable) << c.name;
    EXPECT_EQ(
        m.problems,
        std::vector<std::string>{"no sample time from tidal-agent (its time is not a Unix time)"})
        << c.name;
  }
}

TEST(Snapshot, QueriesUseTheNodeLabel) {
  EXPECT_EQ(SampleTimeQuery("node"), "max by (node) (timestamp(ai_collector_up))");
  EXPECT_NE(AgentSeriesSelector().find("ai_gpu_memory_used_bytes|"), std::string::npos);
  // The agent's series, not the recording rule's ms copy (which a Prometheus may lack).
  EXPECT_NE(AgentSeriesSelector().find("|ai_storage_await_seconds\""), std::string::npos);
  EXPECT_EQ(AgentSeriesSelector().find("ai_storage_await_ms"), std::string::npos);
}

}  // namespace
}  // namespace tidal
