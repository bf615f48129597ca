// `tidal rebalance --kubeconfig` as a process, against the HTTPS stand-in of the
// API server and a stand-in of Prometheus's query API that answers every
// instant query (at past times too) with node a above its GPU-memory reject
// threshold: the dry run prints the move and sends nothing; --execute evicts.
#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/fake_apiserver.h"
#include "testing/process.h"

namespace tidal::rebalance {
namespace {

using nlohmann::json;

// The agents' series of three 4-GPU nodes at whatever time is asked.
class FakePrometheus {
 public:
  FakePrometheus() {
    server_.Post("/api/v1/query", [this](const httplib::Request& q, httplib::Response& r) {
      ++queries_;
      const double t = std::stod(q.get_param_value("time"));
      const std::string expr = q.get_param_value("query");
      json result = json::array();
      const std::map<std::string, double> load{{"a", 0.92}, {"b", 0.30}, {"c", 0.50}};
      for (const auto& [node, u] : load) {
        if (expr.rfind("max by", 0) == 0) {
          result.push_back({{"metric", {{"node", node}}}, {"value", {t, std::to_string(t - 5)}}});
          continue;
        }
        for (int g = 0; g < 4; ++g) {
          const double total = 24.0 * (1 << 30);
          for (const auto& [name, v] : std::map<std::string, double>{
                   {"ai_gpu_memory_used_bytes", u * total}, {"ai_gpu_memory_total_bytes", total}})
            result.push_back(
                {{"metric", {{"__name__", name}, {"node", node}, {"gpu_id", std::to_string(g)}}},
                 {"value", {t, std::to_string(v)}}});
        }
      }
      r.set_content(
          json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}
              .dump(),
          "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakePrometheus() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int queries() const { return queries_.load(); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::atomic<int> queries_{0};
};

struct Cluster {
  Cluster() {
    for (const char* n : {"a", "b", "c"}) api.PutNode(testing::TestNode(n, 4));
    json pod = testing::TestPod("ml", "train-a", 1, "a", "Running",
                                {{"tidal.io/migratable", "true"},
                                 {"tidal.io/checkpoint-interval", "15m"},
                                 {"ai.gpu-memory", "8Gi"}});
    pod["metadata"]["ownerReferences"] = {
        {{"kind", "Job"}, {"name", "train"}, {"controller", true}}};
    const std::time_t started = std::time(nullptr) - 7320;
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
    pod["status"]["startTime"] = buf;
    api.PutPod(pod);
    kubeconfig =
        dir.Write("kubeconfig", testing::TestKubeconfig(api.url(), pki.ca_pem, "rebalance-token"));
  }
  int Evictions() const {
    int n = 0;
    for (const auto& r : api.requests()) n += r.path.ends_with("/eviction") ? 1 : 0;
    return n;
  }
  testing::TempDir dir;
  testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api{pki, "rebalance-token"};
  FakePrometheus prom;
  std::string kubeconfig;
};

TEST(RebalanceCommand, DryRunPrintsThePlanAndSendsNothing) {
  Cluster s;
  const auto r = testing::RunProgram(
      {TIDAL_BINARY, "rebalance", "--prometheus", s.prom.url(), "--kubeconfig", s.kubeconfig},
      s.dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("move     ml/train-a  a -> b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dry run: nothing evicted"), std::string::npos) << r.out;
  EXPECT_EQ(s.Evictions(), 0);
  EXPECT_GE(s.prom.queries(), 22);  // two queries per minute of the 10-minute window
}

TEST(RebalanceCommand, ExecuteEvictsThroughTheApi) {
  Cluster s;
  const auto r = testing::RunProgram({TIDAL_BINARY, "rebalance", "--prometheus", s.prom.url(),
                                      "--kubeconfig", s.kubeconfig, "--execute"},
                                     s.dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("evict    ml/train-a: evicted"), std::string::npos) << r.out;
  EXPECT_EQ(s.Evictions(), 1);
  EXPECT_TRUE(s.api.pod("ml", "train-a").is_null());
}

}  // namespace
}  // namespace tidal::rebalance
