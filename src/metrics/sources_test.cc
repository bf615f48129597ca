// BuildSourcedSnapshot on hand-written query results in dcgm-exporter's and
// node-exporter's label sets (dcgm-exporter: gpu, UUID, device, modelName,
// Hostname; values of DCGM_FI_DEV_FB_* in MiB).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tidal/metrics/snapshot.h"

namespace tidal {
namespace {

constexpr double kMiB = 1024.0 * 1024;
const char* kModel = "NVIDIA A100-SXM4-80GB";

prom::Series S(const std::string& name, Labels labels, double v) {
  labels["__name__"] = name;
  return prom::Series{std::move(labels), {{100.0, v}}};
}

Labels Dcgm(const std::string& host, int gpu, const std::string& uuid = "") {
  return {{"gpu", std::to_string(gpu)},
          {"UUID", uuid.empty() ? "GPU-" + host + "-" + std::to_string(gpu) : uuid},
          {"device", "nvidia" + std::to_string(gpu)},
          {"modelName", kModel},
          {"Hostname", host},
          {"instance", "10.0.0.1:9400"},
          {"job", "dcgm-exporter"}};
}

// node-exporter's await as the series query returns it: no __name__, marked.
prom::Series Await(const std::string& node, const std::string& device, double seconds) {
  return prom::Series{{{"device", device},
                       {"node", node},
                       {"instance", "10.0.0.1:9100"},
                       {"tidal_series", "node_disk_await_seconds"}},
                      {{100.0, seconds}}};
}

prom::Series Time(const std::string& source, const std::string& label, const std::string& node,
                  double t_s) {
  return prom::Series{{{label, node}, {"tidal_source", source}}, {{t_s, t_s}}};
}

MetricsSourceConfig DcgmNodeExporter() {
  MetricsSourceConfig c;
  c.gpu_memory = c.nvlink = MetricsSourceKind::kDcgmExporter;
  c.storage = MetricsSourceKind::kNodeExporter;
  c.gpu_models[kModel] = GpuModelInfo{true, 12, 300};
  return c;
}

// Two 80 GiB GPUs: 8 GiB and 40 GiB used, 1 GiB reserved each.
std::vector<prom::Series> Node(const std::string& host) {
  std::vector<prom::Series> out;
  for (int g = 0; g < 2; ++g) {
    const double used = g == 0 ? 8192 : 40960;
    out.push_back(S("DCGM_FI_DEV_FB_USED", Dcgm(host, g), used));
    out.push_back(S("DCGM_FI_DEV_FB_FREE", Dcgm(host, g), 81920 - 1024 - used));
    out.push_back(S("DCGM_FI_DEV_FB_RESERVED", Dcgm(host, g), 1024));
  }
  out.push_back(Await(host, "nvme0n1", 0.004));
  out.push_back(Await(host, "nvme1n1", 0.0125));
  return out;
}

prom::QueryResult Vec(std::vector<prom::Series> s) {
  prom::QueryResult r;
  r.series = std::move(s);
  return r;
}

prom::QueryResult Times(const std::string& node, double dcgm_s, double disk_s) {
  return Vec({Time("dcgm-exporter", "Hostname", node, dcgm_s),
              Time("node-exporter", "node", node, disk_s)});
}

std::string Problems(const NodeMetrics& m) {
  std::string out;
  for (const auto& p : m.problems) out += p + "\n";
  return out;
}

TEST(SourcedSnapshot, DcgmMemoryAndNodeExporterAwaitJoinByNode) {
  const MetricsSnapshot s = BuildSourcedSnapshot(Vec(Node("gpu-a")), Times("gpu-a", 1000.5, 999),
                                                 DcgmNodeExporter(), "node", 7);
  ASSERT_EQ(s.nodes.count("gpu-a"), 1u);
  const NodeMetrics& m = s.nodes.at("gpu-a");
  EXPECT_TRUE(m.usable) << Problems(m);
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[0].memory_used, 8LL << 30);
  EXPECT_EQ(m.gpus[0].memory_total, 80LL << 30) << "used + free + reserved";
  EXPECT_EQ(m.gpus[1].memory_used, 40LL << 30);
  EXPECT_EQ(m.gpus[0].uuid, "GPU-gpu-a-0");
  EXPECT_EQ(m.gpus[0].model, kModel);
  EXPECT_DOUBLE_EQ(m.storage_await_ms, 12.5) << "the worst device, in ms";
  EXPECT_EQ(m.sample_time_ms, 999000) << "the older source's sample decides";
  EXPECT_EQ(m.sources.gpu_memory, "dcgm-exporter");
  EXPECT_EQ(m.sources.storage, "node-exporter");
  EXPECT_EQ(m.sources.topology, "gpu-models");
  EXPECT_EQ(m.sources.competition, "none");
  ASSERT_EQ(m.gpus[0].nvlink_peers.size(), 1u);
  EXPECT_EQ(m.gpus[0].nvlink_peers[0], (NvlinkPeer{1, 12}));
}

TEST(SourcedSnapshot, ASampleTimeThatIsNoUnixTimeMakesTheNodeUnknown) {
  for (const double t_s : {0.0, -1.0, 0.0004, std::nan(""), 1e300}) {
    const MetricsSnapshot s = BuildSourcedSnapshot(Vec(Node("gpu-a")), Times("gpu-a", t_s, 999),
                                                   DcgmNodeExporter(), "node", 7);
    const NodeMetrics& m = s.nodes.at("gpu-a");
    EXPECT_FALSE(m.usable) << t_s;
    EXPECT_EQ(Problems(m), "no sample time from dcgm-exporter (its time is not a Unix time)\n")
        << t_s;
  }
}

TEST(SourcedSnapshot, MappingErrorsAndDoubtfulValuesMakeTheNodeUnknown) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    const char* name;
    std::vector<prom::Series> series;  // replaces gpu-a's
    prom::QueryResult times;
    const char* problem;  // in the node's problems
  };
  auto with = [](std::vector<prom::Series> extra) {
    auto s = Node("gpu-a");
    s.insert(s.end(), extra.begin(), extra.end());
    return s;
  };
  auto without = [](const std::string& family, int gpu) {
    auto s = Node("gpu-a");
    std::erase_if(s, [&](const prom::Series& x) {
      const auto n = x.metric.find("__name__");
      return n != x.metric.end() && n->second == family &&
             x.metric.at("gpu") == std::to_string(gpu);
    });
    return s;
  };
  const prom::QueryResult good_times = Times("gpu-a", 1000, 1000);
  const Case cases[] = {
      {"a second GPU (another UUID) at one index",
       with({S("DCGM_FI_DEV_FB_USED", Dcgm("gpu-a", 0, "GPU-other"), 100)}), good_times,
       "a second GPU at this index"},
      {"two series for one GPU that disagree",
       with({S("DCGM_FI_DEV_FB_USED", Dcgm("gpu-a", 1), 100)}), good_times, "disagree"},
      {"NaN MiB", with({S("DCGM_FI_DEV_FB_USED", Dcgm("gpu-a", 0), nan)}), good_times, "finite"},
      {"negative MiB", with({S("DCGM_FI_DEV_FB_FREE", Dcgm("gpu-a", 1), -5)}), good_times,
       "finite"},
      {"used exceeds the exported total",
       with({S("DCGM_FI_DEV_FB_TOTAL", Dcgm("gpu-a", 1), 30000)}), good_times, "exceeds total"},
      {"free is missing", without("DCGM_FI_DEV_FB_FREE", 1), good_times,
       "DCGM_FI_DEV_FB_FREE is missing"},
      {"the agent's peer links beyond any NVLink",
       with({S("ai_gpu_nvlink_peer_links",
               {{"node", "gpu-a"}, {"gpu_id", "0"}, {"peer_gpu_id", "1"}}, 1e30)}),
       good_times, "expected a link count 0..65536"},
      {"no gpu label",
       with({S("DCGM_FI_DEV_FB_USED", {{"Hostname", "gpu-a"}, {"UUID", "GPU-x"}}, 1)}), good_times,
       "expected a gpu label"},
      {"a MIG instance",
       with({S(
           "DCGM_FI_DEV_FB_USED",
           [] {
             Labels l = Dcgm("gpu-a", 0);
             l["GPU_I_ID"] = "1";
             return l;
           }(),
           10)}),
       good_times, "MIG"},
      {"no dcgm-exporter sample time", Node("gpu-a"),
       Vec({Time("node-exporter", "node", "gpu-a", 1000)}), "no sample time from dcgm-exporter"},
      {"no node-exporter sample time", Node("gpu-a"),
       Vec({Time("dcgm-exporter", "Hostname", "gpu-a", 1000)}),
       "no sample time from node-exporter"},
      {"no await yet (or no device matches)",
       [] {
         auto s = Node("gpu-a");
         std::erase_if(s, [](const prom::Series& x) { return x.metric.count("tidal_series"); });
         return s;
       }(),
       good_times, "no storage await"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const MetricsSnapshot s =
        BuildSourcedSnapshot(Vec(c.series), c.times, DcgmNodeExporter(), "node", 7);
    ASSERT_EQ(s.nodes.count("gpu-a"), 1u) << "a doubtful node is kept, as unknown";
    const NodeMetrics& m = s.nodes.at("gpu-a");
    EXPECT_FALSE(m.usable);
    EXPECT_NE(Problems(m).find(c.problem), std::string::npos) << Problems(m);
  }
}

TEST(SourcedSnapshot, SeriesWithoutTheNodeLabelAreReportedNotGuessed) {
  struct Case {
    const char* name;
    MetricsSourceConfig config;
    const char* problem;
  };
  MetricsSourceConfig relabelled = DcgmNodeExporter();
  relabelled.dcgm_node_label = "kubernetes_node";
  const Case cases[] = {
      {"dcgm-exporter's Hostname (it is there)", DcgmNodeExporter(), nullptr},
      {"a relabelled node label the scrape did not add", relabelled,
       "4 dcgm-exporter series have no \"kubernetes_node\" label"},
  };
  auto series = Node("gpu-a");
  series.resize(4);  // GPU 0's three series and GPU 1's used
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const MetricsSnapshot s =
        BuildSourcedSnapshot(Vec(series), Times("gpu-a", 1, 1), c.config, "node", 7);
    if (!c.problem) {
      EXPECT_TRUE(s.problems.empty()) << s.problems[0];
      continue;
    }
    EXPECT_EQ(s.nodes.count("gpu-a"), 0u) << "no node is made up from unlabelled series";
    ASSERT_FALSE(s.problems.empty());
    EXPECT_NE(s.problems[0].find(c.problem), std::string::npos) << s.problems[0];
  }
}

TEST(SourcedSnapshot, NvlinkUtilisationAndTopology) {
  struct Case {
    const char* name;
    DcgmNvlinkSeries series;
    std::vector<prom::Series> extra;
    std::map<std::string, GpuModelInfo> models;
    double util0;
    const char* topology;
    std::size_t peers0;
    const char* note;  // nullptr: none
  };
  const std::map<std::string, GpuModelInfo> nvswitch{{kModel, {true, 12, 300}}};
  const std::map<std::string, GpuModelInfo> peak_only{{kModel, {false, 1, 300}}};
  const Case cases[] = {
      {"profiling: the busier direction over the peak",
       DcgmNvlinkSeries::kProfiling,
       {S("DCGM_FI_PROF_NVLINK_TX_BYTES", Dcgm("gpu-a", 0), 60e9),
        S("DCGM_FI_PROF_NVLINK_RX_BYTES", Dcgm("gpu-a", 0), 90e9)},
       nvswitch,
       0.3,
       "gpu-models",
       1,
       nullptr},
      {"bandwidth total in KiB/s, both directions",
       DcgmNvlinkSeries::kBandwidthTotal,
       {S("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Dcgm("gpu-a", 0), 150e9 / 1024)},
       nvswitch,
       0.25,
       "gpu-models",
       1,
       nullptr},
      {"clamped at the peak",
       DcgmNvlinkSeries::kProfiling,
       {S("DCGM_FI_PROF_NVLINK_TX_BYTES", Dcgm("gpu-a", 0), 900e9)},
       nvswitch,
       1.0,
       "gpu-models",
       1,
       nullptr},
      {"no peak for the model: not used, and said",
       DcgmNvlinkSeries::kProfiling,
       {S("DCGM_FI_PROF_NVLINK_TX_BYTES", Dcgm("gpu-a", 0), 60e9)},
       {},
       0,
       "none",
       0,
       "no gpuModels[\"NVIDIA A100-SXM4-80GB\"].nvlinkPeakGBps"},
      {"not fully linked in the table: unlinked, and said",
       DcgmNvlinkSeries::kProfiling,
       {S("DCGM_FI_PROF_NVLINK_TX_BYTES", Dcgm("gpu-a", 0), 30e9)},
       peak_only,
       0.1,
       "none",
       0,
       "the GPUs are taken as unlinked"},
      {"the agent's topology where it runs",
       DcgmNvlinkSeries::kProfiling,
       {S("DCGM_FI_PROF_NVLINK_TX_BYTES", Dcgm("gpu-a", 0), 0),
        S("ai_gpu_nvlink_peer_links", {{"node", "gpu-a"}, {"gpu_id", "0"}, {"peer_gpu_id", "1"}},
          4),
        S("ai_nvlink_competition_index", {{"node", "gpu-a"}}, 0.5)},
       peak_only,
       0,
       "tidal-agent",
       1,
       nullptr},
      {"no NVLink series at all",
       DcgmNvlinkSeries::kProfiling,
       {},
       nvswitch,
       0,
       "gpu-models",
       1,
       "no NVLink traffic series"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    MetricsSourceConfig config = DcgmNodeExporter();
    config.dcgm_nvlink_series = c.series;
    config.gpu_models = c.models;
    auto series = Node("gpu-a");
    series.insert(series.end(), c.extra.begin(), c.extra.end());
    const MetricsSnapshot s =
        BuildSourcedSnapshot(Vec(series), Times("gpu-a", 1, 1), config, "node", 7);
    const NodeMetrics& m = s.nodes.at("gpu-a");
    EXPECT_TRUE(m.usable) << Problems(m);
    ASSERT_EQ(m.gpus.size(), 2u);
    EXPECT_NEAR(m.gpus[0].nvlink_utilization, c.util0, 1e-12);
    EXPECT_EQ(m.sources.topology, c.topology);
    EXPECT_EQ(m.gpus[0].nvlink_peers.size(), c.peers0);
    std::string notes;
    for (const auto& n : m.notes) notes += n + "\n";
    if (c.note)
      EXPECT_NE(notes.find(c.note), std::string::npos) << notes;
    else
      EXPECT_EQ(notes, "");
  }
}

// With the agent as the NVLink source its word on topology holds: no peer series
// means no NVLink, even for a model the table marks fully linked.
TEST(SourcedSnapshot, TheAgentAsNvlinkSourceGivesTheTopology) {
  MetricsSourceConfig config = DcgmNodeExporter();
  config.nvlink = MetricsSourceKind::kTidalAgent;
  auto series = Node("gpu-a");
  series.push_back(S("ai_nvlink_bandwidth_utilization", {{"node", "gpu-a"}, {"gpu_id", "0"}}, 0.2));
  prom::QueryResult times = Times("gpu-a", 1, 1);
  times.series.push_back(Time("tidal-agent", "node", "gpu-a", 1));
  const MetricsSnapshot s = BuildSourcedSnapshot(Vec(series), times, config, "node", 7);
  const NodeMetrics& m = s.nodes.at("gpu-a");
  EXPECT_TRUE(m.usable) << Problems(m);
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(m.gpus[0].nvlink_utilization, 0.2);
  EXPECT_EQ(m.sources.topology, "tidal-agent");
  EXPECT_TRUE(m.gpus[0].nvlink_peers.empty());
  EXPECT_TRUE(m.notes.empty()) << m.notes[0];
}

TEST(SourcedSnapshot, MixedSourcesAndNodesWithoutGpus) {
  // GPU memory and NVLink from the agent, storage from node-exporter; a CPU node
  // with node-exporter only is not a GPU node and stays out of the snapshot.
  MetricsSourceConfig c;
  c.storage = MetricsSourceKind::kNodeExporter;
  const std::vector<prom::Series> series{
      S("ai_gpu_memory_used_bytes", {{"node", "gpu-a"}, {"gpu_id", "0"}}, 4 * kMiB * 1024),
      S("ai_gpu_memory_total_bytes", {{"node", "gpu-a"}, {"gpu_id", "0"}}, 24 * kMiB * 1024),
      S("ai_nvlink_competition_index", {{"node", "gpu-a"}}, 0.25),
      Await("gpu-a", "sdb", 0.05),
      Await("cpu-1", "sdb", 0.5),
  };
  const prom::QueryResult times =
      Vec({Time("tidal-agent", "node", "gpu-a", 50), Time("node-exporter", "node", "gpu-a", 40),
           Time("node-exporter", "node", "cpu-1", 40)});
  const MetricsSnapshot s = BuildSourcedSnapshot(Vec(series), times, c, "node", 7);
  EXPECT_EQ(s.nodes.count("cpu-1"), 0u);
  const NodeMetrics& m = s.nodes.at("gpu-a");
  EXPECT_TRUE(m.usable) << Problems(m);
  EXPECT_EQ(m.gpus[0].memory_used, 4LL << 30);
  EXPECT_DOUBLE_EQ(m.storage_await_ms, 50);
  EXPECT_DOUBLE_EQ(m.nvlink_competition, 0.25);
  EXPECT_EQ(m.sources.gpu_memory, "tidal-agent");
  EXPECT_EQ(m.sources.competition, "tidal-agent");
  EXPECT_EQ(m.sources.storage, "node-exporter");
  EXPECT_EQ(m.sample_time_ms, 40000);
}

TEST(SourcedSnapshot, Queries) {
  struct Case {
    const char* name;
    MetricsSourceConfig config;
    std::vector<std::string> series_has, series_lacks, times_has;
  };
  MetricsSourceConfig total = DcgmNodeExporter();
  total.dcgm_nvlink_series = DcgmNvlinkSeries::kBandwidthTotal;
  total.node_exporter_devices = "nvme[0-9]+n1";
  total.node_exporter_rate_window_ms = 1500;
  MetricsSourceConfig memory_only;
  memory_only.gpu_memory = MetricsSourceKind::kDcgmExporter;
  const Case cases[] = {
      {"dcgm-exporter and node-exporter",
       DcgmNodeExporter(),
       {"DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_FB_RESERVED|DCGM_FI_DEV_FB_TOTAL",
        "DCGM_FI_PROF_NVLINK_TX_BYTES|DCGM_FI_PROF_NVLINK_RX_BYTES", "ai_gpu_nvlink_peer_links",
        "rate(node_disk_read_time_seconds_total{device=~`nvme[0-9]+n[0-9]+|sd[a-z]+|vd[a-z]+|"
        "xvd[a-z]+`}[60s])",
        "\"tidal_series\", \"node_disk_await_seconds\""},
       {"ai_gpu_memory_used_bytes", "ai_storage_await_seconds"},
       {"label_replace(max by (Hostname) (timestamp(DCGM_FI_DEV_FB_USED)), \"tidal_source\", "
        "\"dcgm-exporter\", \"\", \"\")",
        "max by (node) (timestamp(node_disk_reads_completed_total{device=~"}},
      {"the bandwidth counter, a device pattern, a window in ms",
       total,
       {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "{device=~`nvme[0-9]+n1`}[1500ms]"},
       {"DCGM_FI_PROF_NVLINK_TX_BYTES"},
       {}},
      {"dcgm-exporter for memory only: the agent for the rest",
       memory_only,
       {"ai_nvlink_bandwidth_utilization", "ai_storage_await_seconds", "DCGM_FI_DEV_FB_USED"},
       {"node_disk", "DCGM_FI_PROF"},
       {"max by (node) (timestamp(ai_collector_up))", "timestamp(DCGM_FI_DEV_FB_USED)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string q = SourcedSeriesQuery(c.config, "node");
    const std::string t = SourcedSampleTimeQuery(c.config, "node");
    for (const auto& part : c.series_has) EXPECT_NE(q.find(part), std::string::npos) << q;
    for (const auto& part : c.series_lacks) EXPECT_EQ(q.find(part), std::string::npos) << q;
    for (const auto& part : c.times_has) EXPECT_NE(t.find(part), std::string::npos) << t;
  }
}

TEST(SourcedSnapshot, CompetitionIndexFromThePodWatch) {
  // gpu-a: two GPUs from dcgm-exporter; its competition from the agent only in
  // the cases that add ai_nvlink_competition_index.
  struct Case {
    const char* name;
    double agent_index;  // < 0: no agent series
    NvlinkPodCounts pods;
    bool prefer_pods;
    int slots_per_gpu;
    double want;
    const char* source;
  };
  const Case cases[] = {
      {"no agent: NVLink pods / (GPUs × slots)", -1, {{"gpu-a", 3}}, false, 2, 0.75, "pods"},
      {"no agent, no NVLink pods: 0 from the pods, not unknown",
       -1,
       {{"other", 9}},
       false,
       2,
       0,
       "pods"},
      {"more pods than slots: above 1, as the agent's", -1, {{"gpu-a", 6}}, false, 2, 1.5, "pods"},
      {"three slots per GPU", -1, {{"gpu-a", 3}}, false, 3, 0.5, "pods"},
      {"the agent's series where it runs", 0.25, {{"gpu-a", 3}}, false, 2, 0.25, "tidal-agent"},
      {"NVLink from dcgm-exporter: the pods even where the agent runs",
       0.5,
       {{"gpu-a", 1}},
       true,
       2,
       0.25,
       "pods"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto series = Node("gpu-a");
    if (c.agent_index >= 0)
      series.push_back(S("ai_nvlink_competition_index", {{"node", "gpu-a"}}, c.agent_index));
    MetricsSnapshot s =
        BuildSourcedSnapshot(Vec(series), Times("gpu-a", 1, 1), DcgmNodeExporter(), "node", 7);
    ApplyPodCompetition(c.pods, c.slots_per_gpu, c.prefer_pods, &s);
    const NodeMetrics& m = s.nodes.at("gpu-a");
    EXPECT_TRUE(m.usable) << Problems(m);
    EXPECT_DOUBLE_EQ(m.nvlink_competition, c.want);
    EXPECT_EQ(m.sources.competition, c.source);
  }
}

TEST(SourcedSnapshot, TheAgentPathWithoutItsCompetitionSeriesSaysNone) {
  // The agent's pod collector down (no kubelet access): not "tidal-agent", so
  // that the pod watch fills it in.
  const std::vector<prom::Series> series{
      S("ai_gpu_memory_used_bytes", {{"node", "gpu-a"}, {"gpu_id", "0"}}, 4 * kMiB * 1024),
      S("ai_gpu_memory_total_bytes", {{"node", "gpu-a"}, {"gpu_id", "0"}}, 24 * kMiB * 1024),
  };
  MetricsSnapshot s =
      BuildSnapshot(Vec(series), Vec({prom::Series{{{"node", "gpu-a"}}, {{1, 1}}}}), "node", 7);
  EXPECT_EQ(s.nodes.at("gpu-a").sources.competition, "none");
  ApplyPodCompetition({{"gpu-a", 1}}, 2, false, &s);
  EXPECT_DOUBLE_EQ(s.nodes.at("gpu-a").nvlink_competition, 0.5);
  EXPECT_EQ(s.nodes.at("gpu-a").sources.competition, "pods");
}

class FixedSource final : public MetricsSource {
 public:
  Status Fetch(TimeMs, MetricsSnapshot* out) override {
    if (!error.empty()) return Status::Error(error);
    *out = snapshot;
    return Status::Ok();
  }
  std::string Describe() const override { return "fixed"; }
  MetricsSnapshot snapshot;
  std::string error;
};

TEST(PodCompetitionSource, PassesThroughUntilThePodsAreCountedAndKeepsErrors) {
  FixedSource inner;
  NodeMetrics m;
  m.gpus.resize(2);
  m.sources.competition = "none";
  inner.snapshot.nodes["gpu-a"] = m;
  struct Case {
    const char* name;
    bool counter;                         // CountPodsWith given
    std::optional<NvlinkPodCounts> pods;  // what it returns
    std::string error;                    // the inner source's
    double want;
    const char* source;  // nullptr: the fetch fails
  };
  const Case cases[] = {
      {"no pod watch", false, std::nullopt, "", 0, "none"},
      {"the pods not listed yet", true, std::nullopt, "", 0, "none"},
      {"counted", true, NvlinkPodCounts{{"gpu-a", 2}}, "", 0.5, "pods"},
      {"the inner source fails", true, NvlinkPodCounts{{"gpu-a", 2}}, "timeout", 0, nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    inner.error = c.error;
    PodCompetitionSource source(inner, 2, /*prefer_pods=*/true);
    if (c.counter) source.CountPodsWith([&] { return c.pods; });
    MetricsSnapshot out;
    out.series = 42;  // untouched on an error
    const Status st = source.Fetch(1, &out);
    EXPECT_EQ(source.Describe(), "fixed");
    if (!c.source) {
      EXPECT_FALSE(st.ok());
      EXPECT_EQ(out.series, 42u);
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.reason();
    EXPECT_DOUBLE_EQ(out.nodes.at("gpu-a").nvlink_competition, c.want);
    EXPECT_EQ(out.nodes.at("gpu-a").sources.competition, c.source);
  }
}

}  // namespace
}  // namespace tidal
