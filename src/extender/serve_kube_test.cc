// `tidal serve --kubeconfig` as a process against the local HTTPS stand-in of
// the API server: it lists and watches nodes and pods (readiness waits for
// that), filters in NodeNames mode with the watched labels (the fallback's
// golden pool, as Prometheus is unreachable here), and binds through the API.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "testing/fake_apiserver.h"
#include "testing/process.h"

namespace tidal::extender {
namespace {

using nlohmann::json;
using testing::Eventually;

TEST(ServeWithKubernetes, WatchesFiltersAndBinds) {
  testing::TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api(pki, "serve-token");
  api.PutNode(testing::TestNode("gpu-a", 4, {{"tidal.io/pool", "golden"}}));
  api.PutNode(testing::TestNode("gpu-b", 4));
  api.PutPod(testing::TestPod("ml", "train", 2));

  const std::string kubeconfig =
      dir.Write("kubeconfig", testing::TestKubeconfig(api.url(), pki.ca_pem, "serve-token"));
  // Short fallback stages: Prometheus is unreachable, so stage 2 (golden pool only).
  const std::string config = dir.Write("tidal.yaml",
                                       "metricCacheTTL: 1s\nqueryTimeout: 200ms\n"
                                       "fallback: {stage2After: 1s}\n");
  const int port = testing::FreePort();
  const int dead = testing::FreePort();
  testing::Child serve(
      {TIDAL_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--config", config,
       "--prometheus", "http://127.0.0.1:" + std::to_string(dead), "--kubeconfig", kubeconfig},
      {}, "", dir.path() + "/serve.log");
  httplib::Client http("127.0.0.1", port);
  ASSERT_TRUE(Eventually([&] {
    auto r = http.Get("/readyz");
    return r && r->status == 200;
  })) << testing::ReadFile(dir.path() + "/serve.log");

  const json pod = testing::TestPod("ml", "train", 2);
  const std::string args =
      R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":["gpu-a","gpu-b"]})";
  // Stage 2 comes a second after the first failed fetch: only the golden pool.
  json filtered;
  ASSERT_TRUE(Eventually([&] {
    auto r = http.Post("/filter", args, "application/json");
    if (!r || r->status != 200) return false;
    filtered = json::parse(r->body);
    return filtered["NodeNames"] == json::array({"gpu-a"});
  })) << filtered.dump()
      << testing::ReadFile(dir.path() + "/serve.log");
  EXPECT_NE(filtered["FailedNodes"]["gpu-b"].get<std::string>().find("golden"), std::string::npos)
      << filtered.dump();

  auto r = http.Post(
      "/bind", R"({"PodName":"train","PodNamespace":"ml","PodUID":"uid-train","Node":"gpu-a"})",
      "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["Error"], "") << r->body;
  EXPECT_EQ(api.pod("ml", "train")["spec"]["nodeName"], "gpu-a");
  // No metrics for gpu-a: no GPU indices known, so no annotation is written.
  EXPECT_FALSE(api.pod("ml", "train")["metadata"]["annotations"].contains("tidal.io/gpus"));

  auto m = http.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("tidal_extender_binds_total{outcome=\"bound\"} 1"), std::string::npos)
      << m->body;
  // Every request carried the token.
  for (const auto& req : api.requests()) EXPECT_EQ(req.authorization, "Bearer serve-token");
  serve.Stop();
}

// Before the nodes and pods are listed (here: never, the token is refused), a
// decision could promise a GPU that a bound pod holds: every verb answers an
// error, which kube-scheduler retries, and /readyz says why.
TEST(ServeWithKubernetes, DecidesNothingBeforeTheListsAreInItsView) {
  testing::TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api(pki, "serve-token");
  api.PutNode(testing::TestNode("gpu-a", 4));
  const std::string kubeconfig =
      dir.Write("kubeconfig", testing::TestKubeconfig(api.url(), pki.ca_pem, "wrong-token"));
  const int port = testing::FreePort();
  testing::Child serve(
      {TIDAL_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--prometheus",
       "http://127.0.0.1:" + std::to_string(testing::FreePort()), "--kubeconfig", kubeconfig},
      {}, "", dir.path() + "/serve.log");
  httplib::Client http("127.0.0.1", port);
  ASSERT_TRUE(Eventually([&] {
    auto r = http.Get("/readyz");
    return r && r->status == 503 && r->body.find("first list of nodes") != std::string::npos;
  })) << testing::ReadFile(dir.path() + "/serve.log");

  const std::string args = R"({"Pod":)" + testing::TestPod("ml", "train", 1).dump() +
                           R"(,"Nodes":null,"NodeNames":["gpu-a"]})";
  const struct {
    const char* name;
    const char* path;
    std::string body;
    int status;
  } cases[] = {
      {"filter", "/filter", args, 200},
      {"prioritize", "/prioritize", args, 503},
      {"bind", "/bind", R"({"PodName":"train","PodNamespace":"ml","PodUID":"u","Node":"gpu-a"})",
       200},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = http.Post(c.path, c.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, c.status);
    const std::string error =
        c.status == 200 ? json::parse(r->body)["Error"].get<std::string>() : r->body;
    EXPECT_NE(error.find("not ready: waiting for the first list of nodes"), std::string::npos)
        << r->body;
  }
  for (const auto& req : api.requests()) EXPECT_NE(req.method, "POST") << req.path;
  serve.Stop();
}

// --metrics-listen: the kubelet's probes and Prometheus reach /healthz, /readyz
// and /metrics on a second address (the pod's, in the Deployment) while the verbs
// and /debug stay on --listen (loopback): on the second address they are 404.
TEST(ServeWithKubernetes, MetricsListenerServesProbesAndMetricsButNoVerbs) {
  testing::TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api(pki, "serve-token");
  api.PutNode(testing::TestNode("gpu-a", 4));
  const std::string kubeconfig =
      dir.Write("kubeconfig", testing::TestKubeconfig(api.url(), pki.ca_pem, "serve-token"));
  const int port = testing::FreePort();
  const int ops_port = testing::FreePort();
  testing::Child serve(
      {TIDAL_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--metrics-listen",
       "127.0.0.1:" + std::to_string(ops_port), "--prometheus",
       "http://127.0.0.1:" + std::to_string(testing::FreePort()), "--kubeconfig", kubeconfig},
      {}, "", dir.path() + "/serve.log");
  httplib::Client verbs("127.0.0.1", port);
  httplib::Client ops("127.0.0.1", ops_port);
  ASSERT_TRUE(Eventually([&] {
    auto r = ops.Get("/readyz");
    return r && r->status == 200;
  })) << testing::ReadFile(dir.path() + "/serve.log");

  const std::string args = R"({"Pod":)" + testing::TestPod("ml", "train", 1).dump() +
                           R"(,"Nodes":null,"NodeNames":["gpu-a"]})";
  const std::string bind = R"({"PodName":"x","PodNamespace":"ml","PodUID":"u","Node":"nowhere"})";
  const struct {
    const char* name;
    const char* method;
    const char* path;
    std::string body;
    int on_listen, on_metrics_listen;  // HTTP status on each address
    const char* body_has;              // in the answer wherever it is 200
  } cases[] = {
      {"liveness", "GET", "/healthz", "", 200, 200, "ok"},
      {"readiness", "GET", "/readyz", "", 200, 200, "ok"},
      {"metrics", "GET", "/metrics", "", 200, 200, "tidal_extender_fallback_stage"},
      {"filter", "POST", "/filter", args, 200, 404, "NodeNames"},
      {"prioritize", "POST", "/prioritize", args, 200, 404, "gpu-a"},
      {"bind", "POST", "/bind", bind, 200, 404, "Error"},
      {"debug", "GET", "/debug/nodes", "", 200, 404, "\"stage\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (auto [cli, want] : {std::pair{&verbs, c.on_listen}, {&ops, c.on_metrics_listen}}) {
      auto r = std::string_view(c.method) == "GET" ? cli->Get(c.path)
                                                   : cli->Post(c.path, c.body, "application/json");
      ASSERT_TRUE(r) << httplib::to_string(r.error());
      EXPECT_EQ(r->status, want) << (cli == &ops ? "--metrics-listen" : "--listen") << " "
                                 << r->body;
      if (r->status == 200) {
        EXPECT_NE(r->body.find(c.body_has), std::string::npos) << r->body;
      }
    }
  }
  serve.Stop();
}

// A --metrics-listen that cannot be used is refused by name before anything starts.
TEST(ServeWithKubernetes, RefusesAnUnusableMetricsListen) {
  testing::TempDir dir;
  const struct {
    const char* name;
    std::string value;
    const char* message;
  } cases[] = {
      {"no port", "127.0.0.1", "--metrics-listen 127.0.0.1: expected host:port"},
      {"port not a number", ":http", "--metrics-listen :http: the port is not a number"},
      {"port out of range", ":70000", "--metrics-listen :70000: the port is not a number"},
      {"bare IPv6", "::1:8891", "--metrics-listen ::1:8891: expected host:port"},
      {"the port of --listen", ":8890", "--metrics-listen :8890: the port of --listen"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto r =
        testing::RunProgram({TIDAL_BINARY, "serve", "--listen", "127.0.0.1:8890",
                             "--metrics-listen", c.value, "--prometheus", "http://127.0.0.1:1"},
                            dir);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal::extender
