// Evictions and lists against the HTTPS stand-in of the API server
// (tests/testing/fake_apiserver.h): the request's path and body, 429 from a
// disruption budget as "not now", 404 as gone, the rate limit on the clock.
#include "tidal/rebalance/evictor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/fake_apiserver.h"
#include "tidal/kube/objects.h"
#include "tidal/rebalance/pods.h"

namespace tidal::rebalance {
namespace {

using nlohmann::json;

struct Fixture {
  Fixture() {
    std::string error;
    kube::Endpoint e = *kube::ParseServerUrl(api.url(), &error);
    e.ca_pem = pki.ca_pem;
    e.token = "secret";
    client = std::make_unique<kube::KubeClient>(e);
  }
  testing::TempDir dir;
  testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api{pki, "secret"};
  std::unique_ptr<kube::KubeClient> client;
  ManualClock clock{1'000'000};
};

TEST(Evictor, SendsAPolicyV1EvictionAndReadsTheAnswers) {
  Fixture f;
  f.api.PutPod(testing::TestPod("ml", "train-1", 1, "a", "Running"));
  f.api.PutPod(testing::TestPod("ml", "train-2", 1, "a", "Running"));
  Evictor ev(*f.client, f.clock, 10, 60'000);
  struct Step {
    std::string name, pod;
    bool blocked;
    EvictionResult::Outcome want;
  } steps[] = {
      {"evicted", "train-1", false, EvictionResult::Outcome::kEvicted},
      {"already gone", "train-1", false, EvictionResult::Outcome::kGone},
      {"a budget says not now", "train-2", true, EvictionResult::Outcome::kNotNow},
  };
  for (const auto& s : steps) {
    SCOPED_TRACE(s.name);
    f.api.set_evictions_blocked(s.blocked);
    const EvictionResult r = ev.Evict("ml", s.pod);
    EXPECT_EQ(r.outcome, s.want) << r.detail;
  }
  EXPECT_TRUE(f.api.pod("ml", "train-1").is_null());
  EXPECT_FALSE(f.api.pod("ml", "train-2").is_null());
  const auto reqs = f.api.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ml/pods/train-1/eviction");
  EXPECT_EQ(reqs[0].content_type, "application/json");
  const json body = json::parse(reqs[0].body);
  EXPECT_EQ(body["apiVersion"], "policy/v1");
  EXPECT_EQ(body["kind"], "Eviction");
  EXPECT_EQ(body["metadata"]["name"], "train-1");
  EXPECT_EQ(body["metadata"]["namespace"], "ml");
}

TEST(Evictor, RateLimitOnTheClock) {
  Fixture f;
  for (int i = 0; i < 4; ++i)
    f.api.PutPod(testing::TestPod("ml", "p" + std::to_string(i), 1, "a", "Running"));
  Evictor ev(*f.client, f.clock, 2, 60'000);
  EXPECT_EQ(ev.Evict("ml", "p0").outcome, EvictionResult::Outcome::kEvicted);
  EXPECT_EQ(ev.Evict("ml", "p1").outcome, EvictionResult::Outcome::kEvicted);
  EXPECT_EQ(ev.Evict("ml", "p2").outcome, EvictionResult::Outcome::kRateLimited);
  EXPECT_EQ(f.api.requests().size(), 2u);  // the limited one was never sent
  f.clock.Advance(60'000);
  EXPECT_EQ(ev.Evict("ml", "p2").outcome, EvictionResult::Outcome::kEvicted);
}

TEST(Evictor, NoServerIsAFailureNotACrash) {
  kube::Endpoint e;
  e.scheme = "http";
  e.host = "127.0.0.1";
  e.port = 1;  // nothing listens there
  kube::KubeClient client(e, kube::ClientOptions{200, 200, 200});
  ManualClock clock;
  Evictor ev(client, clock, 1, 1000);
  const EvictionResult r = ev.Evict("ml", "p");
  EXPECT_EQ(r.outcome, EvictionResult::Outcome::kFailed);
  EXPECT_NE(r.detail.find("no answer"), std::string::npos) << r.detail;
}

TEST(ListAll, PagesThroughPodsAndDecodes) {
  Fixture f;
  f.api.set_page_size_cap(2);
  for (int i = 0; i < 5; ++i) {
    json pod = testing::TestPod("ml", "p" + std::to_string(i), 1, "a", "Running",
                                {{"tidal.io/migratable", "true"}});
    pod["status"]["startTime"] = "2026-01-01T00:00:00Z";
    f.api.PutPod(pod);
  }
  std::vector<std::string> items;
  ASSERT_TRUE(ListAll(*f.client, "/api/v1/pods?fieldSelector=" + kube::UrlEncode("spec.nodeName!="),
                      500, &items)
                  .ok());
  ASSERT_EQ(items.size(), 5u);
  PodInfo p;
  ASSERT_TRUE(DecodePodInfo(items[0], &p).ok());
  EXPECT_EQ(p.node, "a");
  EXPECT_EQ(p.started_ms, 1'767'225'600'000);
  EXPECT_GE(f.api.lists("pods"), 3);
}

}  // namespace
}  // namespace tidal::rebalance
