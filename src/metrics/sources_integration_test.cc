// tidal serve over a real Prometheus (loopback, 1 s scrapes) with the same four
// nodes' loads fed two ways: the agent's expositions, or dcgm-exporter
// expositions (static, in its format) plus one real prometheus-node-exporter per
// node whose --path.procfs holds a diskstats fixture the test advances, so that
// iostat's await is known. Both sources must give the same verdicts, reasons and
// scores, for a one-GPU pod and for an NVLink pod (the agent's utilisation against
// dcgm-exporter's profiling gauges over the model's peak). Then a node whose
// node-exporter stops is unknown, with the reason.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "testing/exporters.h"
#include "testing/process.h"

namespace tidal {
namespace {

using nlohmann::json;
using tidal::testing::Child;
using tidal::testing::Eventually;
using tidal::testing::FakeExporters;
using tidal::testing::FreePort;
using tidal::testing::kPrometheusBinary;
using tidal::testing::PrometheusServer;
using tidal::testing::ReadFile;
using tidal::testing::TempDir;

constexpr const char* kNodeExporter = "/usr/bin/prometheus-node-exporter";
constexpr const char* kModel = "NVIDIA A100-SXM4-40GB";
constexpr int kTotalMiB = 40960;
constexpr int kReservedMiB = 256;
constexpr int kGpus = 4;

struct Load {
  const char* node;
  int used_mib;    // per GPU
  int await_ms;    // the data disk's
  int nvlink_pct;  // per GPU, of the links' peak (kPeakGBps)
};
// 10 %, 76 % (warning band), 92 % (over reject), 15 % with a slow disk; NVLink
// 20 % (under the warning), 65 % (over reject), idle, 45 % (warning band).
const Load kLoads[] = {{"gpu-idle", 4096, 3, 20},
                       {"gpu-warm", 31130, 5, 65},
                       {"gpu-full", 37683, 5, 0},
                       {"gpu-slow", 6144, 95, 45}};
constexpr int kPeakGBps = 100;  // gpuModels' nvlinkPeakGBps

std::string Gpu(int g) { return std::to_string(g); }

std::string AgentExposition(const Load& l) {
  const double mib = 1024.0 * 1024;
  const std::string n = l.node;
  std::string s = "# TYPE ai_gpu_memory_used_bytes gauge\n";
  for (int g = 0; g < kGpus; ++g)
    s += "ai_gpu_memory_used_bytes{node=\"" + n + "\",gpu_id=\"" + Gpu(g) + "\"} " +
         std::to_string(static_cast<long long>(l.used_mib * mib)) + "\n";
  s += "# TYPE ai_gpu_memory_total_bytes gauge\n";
  for (int g = 0; g < kGpus; ++g)
    s += "ai_gpu_memory_total_bytes{node=\"" + n + "\",gpu_id=\"" + Gpu(g) + "\"} " +
         std::to_string(static_cast<long long>(kTotalMiB * mib)) + "\n";
  s += "# TYPE ai_gpu_nvlink_peer_links gauge\n";
  for (int g = 0; g < kGpus; ++g)
    for (int p = 0; p < kGpus; ++p)
      if (p != g)
        s += "ai_gpu_nvlink_peer_links{node=\"" + n + "\",gpu_id=\"" + Gpu(g) +
             "\",peer_gpu_id=\"" + Gpu(p) + "\"} 4\n";
  s += "# TYPE ai_nvlink_bandwidth_utilization gauge\n";
  for (int g = 0; g < kGpus; ++g)
    s += "ai_nvlink_bandwidth_utilization{node=\"" + n + "\",gpu_id=\"" + Gpu(g) + "\"} " +
         std::to_string(l.nvlink_pct / 100.0) + "\n";
  s += "# TYPE ai_nvlink_competition_index gauge\nai_nvlink_competition_index{node=\"" + n +
       "\"} 0\n";
  s += "# TYPE ai_storage_await_seconds gauge\nai_storage_await_seconds{node=\"" + n +
       "\",device=\"nvme0n1\"} " + std::to_string(l.await_ms / 1000.0) + "\n";
  s += "# TYPE ai_collector_up gauge\n";
  for (const char* c : {"gpu", "disk"})
    s += "ai_collector_up{node=\"" + n + "\",collector=\"" + c + "\",reason=\"\"} 1\n";
  return s;
}

// What dcgm-exporter serves with the default counters plus DCGM_FI_DEV_FB_RESERVED
// and the NVLink profiling gauges: HELP/TYPE from its counters file, labels gpu,
// UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION.
std::string DcgmExposition(const Load& l) {
  struct Family {
    const char* name;
    const char* help;
  };
  const Family families[] = {
      {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."},
      {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
      {"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB)."},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES",
       "The rate of data transmitted over NVLink, not including protocol headers, in bytes per "
       "second."},
      {"DCGM_FI_PROF_NVLINK_RX_BYTES",
       "The rate of data received over NVLink, not including protocol headers, in bytes per "
       "second."},
  };
  std::string s;
  for (const Family& f : families) {
    s += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " gauge\n";
    for (int g = 0; g < kGpus; ++g) {
      const std::string name = f.name;
      // NVLink in bytes/s: TX at the load, RX at half of it (the busier direction counts).
      const long long nvlink = static_cast<long long>(l.nvlink_pct) * kPeakGBps * 10'000'000;
      const long long value = name == "DCGM_FI_DEV_FB_FREE" ? kTotalMiB - kReservedMiB - l.used_mib
                              : name == "DCGM_FI_DEV_FB_USED"          ? l.used_mib
                              : name == "DCGM_FI_DEV_FB_RESERVED"      ? kReservedMiB
                              : name == "DCGM_FI_PROF_NVLINK_TX_BYTES" ? nvlink
                                                                       : nvlink / 2;
      s += name + "{gpu=\"" + Gpu(g) + "\",UUID=\"GPU-" + l.node + "-000" + Gpu(g) +
           "\",pci_bus_id=\"00000000:0" + Gpu(g + 7) + ":00.0\",device=\"nvidia" + Gpu(g) +
           "\",modelName=\"" + kModel + "\",Hostname=\"" + l.node +
           "\",DCGM_FI_DRIVER_VERSION=\"535.129.03\"} " + std::to_string(value) + "\n";
    }
  }
  return s;
}

// /proc/diskstats at step k: the data disk nvme0n1 completes 10 reads and 10
// writes a step, each taking await_ms; the root disk sda is slow (500 ms) and
// must be left out by the devices pattern; a partition too.
std::string Diskstats(const Load& l, long k) {
  auto line = [](int major, int minor, const char* dev, long ios, long ms) {
    // reads, merged, sectors, ms, writes, merged, sectors, ms, in flight, io ms, weighted ms
    return std::to_string(major) + " " + std::to_string(minor) + " " + dev + " " +
           std::to_string(ios) + " 0 " + std::to_string(ios * 8) + " " + std::to_string(ms) + " " +
           std::to_string(ios) + " 0 " + std::to_string(ios * 8) + " " + std::to_string(ms) +
           " 0 " + std::to_string(ms) + " " + std::to_string(2 * ms) + "\n";
  };
  // Large starting values: rate()'s extrapolation stops at a counter's zero, and
  // must not here (it would scale time and I/Os differently).
  const long ios = 1'000'000 + 10 * k;
  return line(8, 0, "sda", ios, 500 * ios) + line(8, 1, "sda1", ios, 500 * ios) +
         line(259, 0, "nvme0n1", ios, 3'000'000 + 10 * k * l.await_ms);
}

enum class Source { kAgent, kExporters };

// Everything one source needs, started in the constructor, stopped in the destructor.
class Stack {
 public:
  explicit Stack(Source source) : source_(source) {}
  ~Stack() {
    serve_.reset();
    prometheus_.reset();
    stop_ = true;
    if (ticker_.joinable()) ticker_.join();
    exporters_.clear();
  }

  void Start() {
    ASSERT_EQ(access(kPrometheusBinary, X_OK), 0)
        << kPrometheusBinary << " is required (scripts/install-deps.sh)";
    for (const Load& l : kLoads)
      fake_exporters_.Serve(l.node,
                            source_ == Source::kAgent ? AgentExposition(l) : DcgmExposition(l),
                            source_ == Source::kAgent ? "agent-" : "dcgm-exporter-");
    ASSERT_TRUE(fake_exporters_.Start());
    std::string scrape = fake_exporters_.PrometheusConfig();
    if (source_ == Source::kExporters) StartNodeExporters(&scrape);
    if (::testing::Test::HasFatalFailure()) return;
    prometheus_ = std::make_unique<PrometheusServer>(dir_, dir_.path() + "/tsdb", scrape);
    ASSERT_TRUE(prometheus_->started());

    std::string config =
        "metricCacheTTL: 1s\nqueryTimeout: 1s\nmetricsStaleAfter: 60s\n"
        "fallback: {stage2After: 4s, goldenPool: {tidal.io/pool: golden}}\n";
    if (source_ == Source::kExporters)
      config +=
          std::string(
              "metricsSource:\n"
              "  gpuMemory: dcgm-exporter\n  nvlink: dcgm-exporter\n  storage: node-exporter\n"
              "  nodeExporter: {devices: 'nvme[0-9]+n[0-9]+', rateWindow: 5s}\n"
              "  gpuModels: {\"") +
          kModel + "\": {topology: fully-linked, linksPerPair: 4, nvlinkPeakGBps: " +
          std::to_string(kPeakGBps) + "}}\n";
    const std::string config_file = dir_.Write("tidal.yaml", config);
    serve_port_ = FreePort();
    serve_ = std::make_unique<Child>(
        std::vector<std::string>{
            TIDAL_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(serve_port_),
            "--config", config_file, "--prometheus", prometheus_->url(), "--log-level", "debug"},
        std::vector<std::string>{}, "", dir_.path() + "/serve.log");
    ASSERT_TRUE(serve_->started());
    // Every node known and usable (the await's rate needs two scrapes in its window).
    ASSERT_TRUE(Eventually([&] {
      const std::string m = Metrics();
      return m.find("tidal_extender_snapshot_nodes 4\n") != std::string::npos &&
             m.find("tidal_extender_snapshot_unusable_nodes 0\n") != std::string::npos &&
             m.find("tidal_extender_fallback_stage 0\n") != std::string::npos;
    })) << Debug().dump(2)
        << ReadFile(dir_.path() + "/serve.log");
  }

  void StopNodeExporter(const std::string& node) { exporters_.erase(node); }

  httplib::Result Post(const std::string& verb, const std::string& body) {
    httplib::Client cli("127.0.0.1", serve_port_);
    cli.set_read_timeout(5, 0);
    return cli.Post(("/" + verb).c_str(), body, "application/json");
  }
  json Debug() {
    httplib::Client cli("127.0.0.1", serve_port_);
    auto r = cli.Get("/debug/nodes");
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  }
  std::string Metrics() {
    httplib::Client cli("127.0.0.1", serve_port_);
    auto r = cli.Get("/metrics");
    return r ? r->body : "";
  }
  std::string Log() { return ReadFile(dir_.path() + "/serve.log"); }

 private:
  void WriteDiskstats(long k) {
    for (const Load& l : kLoads) {
      // Renamed into place: node-exporter never reads half a file.
      const std::string dir = dir_.path() + "/procfs/" + l.node;
      dir_.Write("procfs/" + std::string(l.node) + "/diskstats.tmp", Diskstats(l, k));
      std::filesystem::rename(dir + "/diskstats.tmp", dir + "/diskstats");
    }
  }

  void StartNodeExporters(std::string* scrape) {
    ASSERT_EQ(access(kNodeExporter, X_OK), 0)
        << kNodeExporter << " is required (scripts/install-deps.sh)";
    WriteDiskstats(0);
    ticker_ = std::thread([this] {
      for (long k = 1; !stop_; ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        WriteDiskstats(k);
      }
    });
    *scrape += "  - job_name: node-exporter\n    static_configs:\n";
    for (const Load& l : kLoads) {
      const std::string base = dir_.path() + "/procfs/" + l.node;
      std::filesystem::create_directories(base + "-sys");
      std::filesystem::create_directories(base + "-udev");
      const int port = FreePort();
      exporters_[l.node] = std::make_unique<Child>(
          std::vector<std::string>{kNodeExporter, "--collector.disable-defaults",
                                   "--collector.diskstats", "--path.procfs=" + base,
                                   "--path.sysfs=" + base + "-sys",
                                   "--path.udev.data=" + base + "-udev",
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port)},
          std::vector<std::string>{}, "", base + "-node-exporter.log");
      ASSERT_TRUE(exporters_[l.node]->started());
      // The node's name arrives as a target label and is relabelled to `node`, as
      // a Kubernetes scrape relabels __meta_kubernetes_pod_node_name.
      *scrape += "      - {targets: ['127.0.0.1:" + std::to_string(port) +
                 "'], labels: {__tmp_node_name: " + l.node + "}}\n";
    }
    *scrape +=
        "    relabel_configs:\n"
        "      - {source_labels: [__tmp_node_name], target_label: node}\n";
  }

  Source source_;
  TempDir dir_;
  FakeExporters fake_exporters_;
  std::thread ticker_;
  std::atomic<bool> stop_{false};
  int serve_port_ = 0;
  std::map<std::string, std::unique_ptr<Child>> exporters_;
  std::unique_ptr<PrometheusServer> prometheus_;
  std::unique_ptr<Child> serve_;
};

std::string Pod() {
  return R"({"metadata":{"name":"train","namespace":"ml","uid":"u1","annotations":{"ai.gpu-memory":"4Gi"}},)"
         R"("spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";
}

// Two GPUs that require NVLink: the NVLink load filters and scores it.
std::string NvlinkPod() {
  return R"({"metadata":{"name":"ddp","namespace":"ml","uid":"u2","annotations":{"ai.gpu-memory":"4Gi","ai.nvlink-required":"true"}},)"
         R"("spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})";
}

std::string NamesArgs(const std::vector<std::string>& names, const std::string& pod = Pod()) {
  return R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":)" + json(names).dump() + "}";
}

TEST(MetricsSources, ExportersGiveTheAgentsVerdictsReasonsAndScores) {
  struct Case {
    const char* name;
    Source source;
    json sources;       // /debug/nodes' for a node
    const char* count;  // in /metrics
  };
  const Case cases[] = {
      {"tidal-agent",
       Source::kAgent,
       {{"gpuMemory", "tidal-agent"},
        {"nvlink", "tidal-agent"},
        {"topology", "tidal-agent"},
        {"competition", "tidal-agent"},
        {"storage", "tidal-agent"}},
       "tidal_extender_snapshot_nodes_by_source{dimension=\"gpuMemory\",source=\"tidal-agent\"} 4"},
      {"dcgm-exporter + node-exporter",
       Source::kExporters,
       {{"gpuMemory", "dcgm-exporter"},
        {"nvlink", "dcgm-exporter"},
        {"topology", "gpu-models"},
        {"competition", "none"},
        {"storage", "node-exporter"}},
       "tidal_extender_snapshot_nodes_by_source{dimension=\"storage\",source=\"node-exporter\"} "
       "4"},
  };
  std::map<std::string, json> prioritized, filtered_nvlink, prioritized_nvlink;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Stack stack(c.source);
    stack.Start();
    if (::testing::Test::HasFatalFailure()) return;
    auto r = stack.Post("filter", NamesArgs({"gpu-idle", "gpu-warm", "gpu-full", "gpu-slow"}));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    json j = json::parse(r->body);
    EXPECT_EQ(j["NodeNames"], json({"gpu-idle", "gpu-warm"})) << r->body;
    EXPECT_EQ(j["FailedNodes"]["gpu-full"],
              "tidal: loadaware: GPU memory 92 percent over reject threshold 82 percent");
    EXPECT_EQ(j["FailedNodes"]["gpu-slow"],
              "tidal: loadaware: storage await 95.0 ms over reject threshold 67.9 ms")
        << "the root disk (500 ms) is not a data disk";
    r = stack.Post("prioritize", NamesArgs({"gpu-warm", "gpu-idle", "gpu-slow"}));
    ASSERT_TRUE(r);
    j = json::parse(r->body);
    ASSERT_EQ(j.size(), 3u) << r->body;
    prioritized[c.name] = j;

    // An NVLink pod: gpu-warm's links are over the reject threshold, gpu-slow's in
    // the warning band, gpu-idle's under it.
    r = stack.Post("filter",
                   NamesArgs({"gpu-idle", "gpu-warm", "gpu-full", "gpu-slow"}, NvlinkPod()));
    ASSERT_TRUE(r);
    j = json::parse(r->body);
    EXPECT_EQ(j["NodeNames"], json({"gpu-idle"})) << r->body;
    EXPECT_EQ(j["FailedNodes"]["gpu-warm"],
              "tidal: loadaware: NVLink load 0.65 over reject threshold 0.57")
        << r->body;
    filtered_nvlink[c.name] = j;
    r = stack.Post("prioritize", NamesArgs({"gpu-idle", "gpu-warm", "gpu-slow"}, NvlinkPod()));
    ASSERT_TRUE(r);
    prioritized_nvlink[c.name] = json::parse(r->body);

    const json debug = stack.Debug();
    EXPECT_EQ(debug["sources"]["gpu-idle"], c.sources) << debug.dump(2);
    EXPECT_NE(stack.Metrics().find(c.count), std::string::npos) << stack.Metrics();
  }
  // The same loads through either source: the same scores, host by host.
  EXPECT_EQ(prioritized["tidal-agent"], prioritized["dcgm-exporter + node-exporter"]);
  EXPECT_EQ(filtered_nvlink["tidal-agent"], filtered_nvlink["dcgm-exporter + node-exporter"]);
  EXPECT_EQ(prioritized_nvlink["tidal-agent"], prioritized_nvlink["dcgm-exporter + node-exporter"]);
  std::map<std::string, int> nvlink_by_host;
  for (const auto& e : prioritized_nvlink["tidal-agent"]) nvlink_by_host[e["Host"]] = e["Score"];
  EXPECT_GT(nvlink_by_host["gpu-idle"], nvlink_by_host["gpu-slow"])
      << prioritized_nvlink["tidal-agent"].dump();
  const json& scores = prioritized["tidal-agent"];
  std::map<std::string, int> by_host;
  for (const auto& e : scores) by_host[e["Host"]] = e["Score"];
  EXPECT_GT(by_host["gpu-idle"], by_host["gpu-warm"]) << scores.dump();
}

TEST(MetricsSources, ANodeWhoseNodeExporterStopsIsUnknownWithTheReason) {
  Stack stack(Source::kExporters);
  stack.Start();
  if (::testing::Test::HasFatalFailure()) return;
  stack.StopNodeExporter("gpu-slow");
  // Prometheus marks the series stale at the first failed scrape: no sample time.
  ASSERT_TRUE(Eventually([&] {
    const json d = stack.Debug();
    return d["unusable"].contains("gpu-slow") &&
           d["unusable"]["gpu-slow"].dump().find("no sample time from node-exporter") !=
               std::string::npos;
  })) << stack.Debug().dump(2)
      << stack.Log();
  EXPECT_NE(stack.Metrics().find("tidal_extender_snapshot_unusable_nodes 1\n"), std::string::npos);
  // Unknown, not idle and not rejected on its last await: it is kept at the
  // unknown-node penalty, below the known idle node.
  auto r = stack.Post("filter", NamesArgs({"gpu-idle", "gpu-slow"}));
  ASSERT_TRUE(r);
  json j = json::parse(r->body);
  EXPECT_EQ(j["NodeNames"], json({"gpu-idle", "gpu-slow"})) << r->body;
  r = stack.Post("prioritize", NamesArgs({"gpu-slow", "gpu-idle"}));
  ASSERT_TRUE(r);
  j = json::parse(r->body);
  std::map<std::string, int> by_host;
  for (const auto& e : j) by_host[e["Host"]] = e["Score"];
  EXPECT_GT(by_host["gpu-idle"], by_host["gpu-slow"]) << r->body;
}

}  // namespace
}  // namespace tidal
