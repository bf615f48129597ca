// tidal serve as a process over a real Prometheus (loopback, temporary data
// dir, 1 s scrapes) scraping four static agent expositions with known loads:
// verdicts, reasons and score order; then Prometheus stopped (stage 1, then
// stage 2 at the configured time) and restarted (back to normal by itself).
#include <gtest/gtest.h>
#include <httplib.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "testing/exporters.h"
#include "testing/process.h"

namespace tidal::extender {
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

// One agent's exposition: 4 × 24 GiB GPUs at `used` each, fully linked.
std::string Exposition(const std::string& node, double used, double await_ms) {
  const double total = 24.0 * (1LL << 30);
  std::string s = "# TYPE ai_gpu_memory_used_bytes gauge\n";
  for (int g = 0; g < 4; ++g)
    s += "ai_gpu_memory_used_bytes{node=\"" + node + "\",gpu_id=\"" + std::to_string(g) + "\"} " +
         std::to_string(used * total) + "\n";
  s += "# TYPE ai_gpu_memory_total_bytes gauge\n";
  for (int g = 0; g < 4; ++g)
    s += "ai_gpu_memory_total_bytes{node=\"" + node + "\",gpu_id=\"" + std::to_string(g) + "\"} " +
         std::to_string(total) + "\n";
  s += "# TYPE ai_gpu_nvlink_peer_links gauge\n";
  for (int g = 0; g < 4; ++g)
    for (int p = 0; p < 4; ++p)
      if (p != g)
        s += "ai_gpu_nvlink_peer_links{node=\"" + node + "\",gpu_id=\"" + std::to_string(g) +
             "\",peer_gpu_id=\"" + std::to_string(p) + "\"} 4\n";
  s += "# TYPE ai_nvlink_competition_index gauge\nai_nvlink_competition_index{node=\"" + node +
       "\"} 0\n";
  // The agent reports seconds; the extender converts back to ms for the policy.
  s += "# TYPE ai_storage_await_seconds gauge\nai_storage_await_seconds{node=\"" + node +
       "\",device=\"sda\"} " + std::to_string(await_ms / 1000) + "\n";
  s += "# TYPE ai_collector_up gauge\n";
  for (const char* c : {"gpu", "disk"})
    s += std::string("ai_collector_up{node=\"") + node + "\",collector=\"" + c +
         "\",reason=\"\"} 1\n";
  return s;
}

struct Known {
  const char* node;
  double used, await_ms;
};
const Known kNodes[] = {
    {"gpu-idle", 0.10, 3}, {"gpu-warm", 0.76, 5}, {"gpu-full", 0.92, 5}, {"gpu-slow", 0.15, 95}};

class ServeOverPrometheus : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kPrometheusBinary, X_OK), 0)
        << kPrometheusBinary << " is required (scripts/install-deps.sh)";
    for (const auto& k : kNodes) agents_.Serve(k.node, Exposition(k.node, k.used, k.await_ms));
    ASSERT_TRUE(agents_.Start());
    prom_config_ = agents_.PrometheusConfig();
    StartPrometheus();

    const std::string config =
        dir_.Write("tidal.yaml",
                   "metricCacheTTL: 1s\nqueryTimeout: 1s\nmetricsStaleAfter: 60s\n"
                   "fallback: {stage2After: 4s, goldenPool: {tidal.io/pool: golden}}\n");
    serve_port_ = FreePort();
    serve_ = std::make_unique<Child>(
        std::vector<std::string>{TIDAL_BINARY, "serve", "--listen",
                                 "127.0.0.1:" + std::to_string(serve_port_), "--config", config,
                                 "--prometheus", "http://127.0.0.1:" + std::to_string(prom_port_),
                                 "--log-level", "debug"},
        std::vector<std::string>{}, "", dir_.path() + "/serve.log");
    ASSERT_TRUE(serve_->started());
    ASSERT_TRUE(Eventually([&] {
      return Stage() == 0 &&
             Metrics().find("tidal_extender_snapshot_nodes 4\n") != std::string::npos;
    })) << ReadFile(dir_.path() + "/serve.log");
  }

  void TearDown() override {
    serve_.reset();
    prometheus_.reset();
  }

  // Again after a Stop: on the same port, over the same data.
  void StartPrometheus() {
    prometheus_ =
        std::make_unique<PrometheusServer>(dir_, dir_.path() + "/tsdb", prom_config_, prom_port_);
    prom_port_ = prometheus_->port();
    ASSERT_TRUE(prometheus_->started());
  }

  httplib::Result Post(const std::string& verb, const std::string& body) {
    httplib::Client cli("127.0.0.1", serve_port_);
    cli.set_read_timeout(5, 0);
    return cli.Post(("/" + verb).c_str(), body, "application/json");
  }
  json DebugNodes() {
    httplib::Client cli("127.0.0.1", serve_port_);
    auto r = cli.Get("/debug/nodes");
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  }
  int Stage() {
    const json d = DebugNodes();
    return d.contains("stage") ? d["stage"].get<int>() : -1;
  }
  std::string Metrics() {
    httplib::Client cli("127.0.0.1", serve_port_);
    auto r = cli.Get("/metrics");
    return r ? r->body : "";
  }

  TempDir dir_;
  FakeExporters agents_;
  int prom_port_ = 0, serve_port_ = 0;
  std::string prom_config_;  // prometheus.yml's text
  std::unique_ptr<PrometheusServer> prometheus_;
  std::unique_ptr<Child> serve_;
};

std::string Pod() {
  return R"({"metadata":{"name":"train","namespace":"ml","uid":"u1","annotations":{"ai.gpu-memory":"4Gi"}},)"
         R"("spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";
}

std::string NamesArgs(const std::vector<std::string>& names) {
  return R"({"Pod":)" + Pod() + R"(,"Nodes":null,"NodeNames":)" + json(names).dump() + "}";
}

std::string NodesArgs() {
  json items = json::array();
  for (const auto& k : kNodes) {
    json labels = json::object();
    if (std::string(k.node) == "gpu-warm") labels["tidal.io/pool"] = "golden";
    items.push_back({{"metadata", {{"name", k.node}, {"labels", labels}}},
                     {"status", {{"allocatable", {{"nvidia.com/gpu", "4"}}}}}});
  }
  return R"({"Pod":)" + Pod() + R"(,"Nodes":{"items":)" + items.dump() + "}}";
}

std::vector<std::string> ItemNames(const json& j) {
  std::vector<std::string> out;
  for (const auto& n : j["Nodes"]["items"]) out.push_back(n["metadata"]["name"]);
  return out;
}

TEST_F(ServeOverPrometheus, LiveVerdictsThenBothFallbackStagesThenRecovery) {
  // Normal: over-threshold memory and disk are rejected with readable reasons.
  auto r = Post("filter", NamesArgs({"gpu-idle", "gpu-warm", "gpu-full", "gpu-slow"}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json j = json::parse(r->body);
  EXPECT_EQ(j["NodeNames"], json({"gpu-idle", "gpu-warm"})) << r->body;
  EXPECT_EQ(j["FailedNodes"]["gpu-full"],
            "tidal: loadaware: GPU memory 92 percent over reject threshold 82 percent");
  EXPECT_EQ(j["FailedNodes"]["gpu-slow"],
            "tidal: loadaware: storage await 95.0 ms over reject threshold 67.9 ms");
  r = Post("prioritize", NamesArgs({"gpu-idle", "gpu-warm"}));
  ASSERT_TRUE(r);
  j = json::parse(r->body);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["Host"], "gpu-idle");
  EXPECT_GT(j[0]["Score"].get<int>(), j[1]["Score"].get<int>()) << r->body;

  // Prometheus goes away: stage 1 (requests still answered, fresh readings still filter).
  prometheus_->Stop();
  ASSERT_TRUE(Eventually([&] { return Stage() == 1; }, 10)) << ReadFile(dir_.path() + "/serve.log");
  r = Post("filter", NodesArgs());
  ASSERT_TRUE(r);
  j = json::parse(r->body);
  EXPECT_EQ(ItemNames(j), (std::vector<std::string>{"gpu-idle", "gpu-warm"})) << r->body;
  EXPECT_NE(Metrics().find("tidal_extender_fallback_stage 1"), std::string::npos);

  // After stage2After: the golden pool only.
  ASSERT_TRUE(Eventually([&] { return Stage() == 2; }, 15));
  r = Post("filter", NodesArgs());
  ASSERT_TRUE(r);
  j = json::parse(r->body);
  EXPECT_EQ(ItemNames(j), std::vector<std::string>{"gpu-warm"}) << r->body;
  EXPECT_NE(j["FailedNodes"]["gpu-idle"].get<std::string>().find("fallback stage 2"),
            std::string::npos);
  EXPECT_NE(Metrics().find("tidal_extender_fallback_stage 2"), std::string::npos);

  // Back: normal scheduling by itself.
  StartPrometheus();
  ASSERT_TRUE(Eventually([&] { return Stage() == 0; }, 60)) << ReadFile(dir_.path() + "/serve.log");
  r = Post("filter", NodesArgs());
  ASSERT_TRUE(r);
  EXPECT_EQ(ItemNames(json::parse(r->body)), (std::vector<std::string>{"gpu-idle", "gpu-warm"}));

  const std::string metrics = Metrics();
  for (const char* family :
       {"tidal_extender_requests_total{verb=\"filter\",code=\"ok\"}",
        "tidal_extender_request_duration_seconds_bucket", "tidal_extender_snapshot_age_seconds",
        "tidal_extender_rejections_total{reason=\"loadaware\"}",
        "tidal_extender_fallback_transitions_total{stage=\"2\"}",
        "tidal_extender_fallback_golden_pool_empty 0",
        "tidal_extender_prioritize_reuse_total{reuse=\"answer\"}"})
    EXPECT_NE(metrics.find(family), std::string::npos) << family;
  const std::string log = ReadFile(dir_.path() + "/serve.log");
  EXPECT_NE(log.find("fallback: stage 2"), std::string::npos) << log;
  EXPECT_NE(log.find("metrics are back"), std::string::npos) << log;

  // The extender's own exposition passes promtool.
  const std::string file = dir_.Write("serve.prom", metrics);
  Child promtool({"/usr/bin/promtool", "check", "metrics"}, {}, file,
                 dir_.path() + "/promtool.out");
  EXPECT_EQ(promtool.Wait(), 0) << ReadFile(dir_.path() + "/promtool.out");
}

// A second instance on the address of a running one must not share the port
// (SO_REUSEPORT would split requests between two sets of reservations, so one
// GPU could be promised twice): it exits non-zero naming the address and why,
// and the first goes on serving.
TEST(SecondInstance, OnABusyAddressExitsSayingTheAddressIsInUse) {
  struct Case {
    const char* name;
    std::function<std::vector<std::string>(int port)> argv;
  };
  const int dead = FreePort();  // no Prometheus: serve starts in its fallback
  const Case cases[] = {
      {"tidal serve",
       [&](int port) {
         return std::vector<std::string>{
             TIDAL_BINARY,   "serve",
             "--listen",     "127.0.0.1:" + std::to_string(port),
             "--prometheus", "http://127.0.0.1:" + std::to_string(dead)};
       }},
      {"tidal serve, the --metrics-listen address busy",
       [&](int port) {
         return std::vector<std::string>{
             TIDAL_BINARY,       "serve",
             "--listen",         "127.0.0.1:0",
             "--metrics-listen", "127.0.0.1:" + std::to_string(port),
             "--prometheus",     "http://127.0.0.1:" + std::to_string(dead)};
       }},
      {"tidal agent",
       [&](int port) {
         return std::vector<std::string>{TIDAL_BINARY,   "agent",
                                         "--listen",     "127.0.0.1:" + std::to_string(port),
                                         "--node-name",  "n",
                                         "--nvml-lib",   "/nonexistent/libnvidia-ml.so.1",
                                         "--nvidia-smi", "/nonexistent/nvidia-smi"};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const int port = FreePort();
    Child first(c.argv(port), {}, "", dir.path() + "/first.log");
    httplib::Client http("127.0.0.1", port);
    ASSERT_TRUE(Eventually([&] {
      auto r = http.Get("/healthz");
      return r && r->status != 0;
    })) << ReadFile(dir.path() + "/first.log");
    const testing::RunResult second = testing::RunProgram(c.argv(port), dir);
    EXPECT_NE(second.exit_code, 0) << second.out;
    EXPECT_NE(second.out.find("cannot listen on 127.0.0.1:" + std::to_string(port) +
                              ": Address already in use"),
              std::string::npos)
        << second.out;
    auto r = http.Get("/healthz");
    EXPECT_TRUE(r) << "the first instance stopped serving";
    first.Stop();
  }
}

}  // namespace
}  // namespace tidal::extender
