// `tidal serve --kubeconfig` as a process against the local HTTPS stand-in of
// the API server: it lists and watches nodes and pods (readiness waits for
// that), filters in NodeNames mode with the watched labels (the fallback's
// golden pool, as Prometheus is unreachable here), and binds through the API.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace tidal::extender
