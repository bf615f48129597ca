// Whole rounds against the API server stand-in, with metrics from a fake
// source: dry run sends nothing, --execute evicts and then respects the
// cooldown, a budget or a 429 holds a move, a metrics outage moves nothing.
#include "tidal/rebalance/rebalancer.h"

#include <gtest/gtest.h>

#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>

#include "testing/fake_apiserver.h"
#include "tidal/policy/config.h"

namespace tidal::rebalance {
namespace {

using nlohmann::json;
constexpr Bytes kGi = Bytes{1} << 30;
constexpr TimeMs kStart = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

class Source final : public MetricsSource {
 public:
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override {
    if (down) return Status::Error("connection refused");
    MetricsSnapshot s;
    s.fetched_at_ms = now_ms;
    for (const auto& [name, u] : load) {
      NodeMetrics m;
      for (int g = 0; g < 4; ++g) {
        Gpu gpu;
        gpu.index = g;
        gpu.memory_total = 24 * kGi;
        gpu.memory_used = static_cast<Bytes>(u * 24 * static_cast<double>(kGi));
        m.gpus.push_back(gpu);
      }
      m.sample_time_ms = now_ms - 5'000;
      // As the DaemonSet's agent: no competition index of its own.
      m.sources.competition = "none";
      s.nodes[name] = m;
    }
    *out = s;
    return Status::Ok();
  }
  std::string Describe() const override { return "fake"; }
  std::map<std::string, double> load{{"a", 0.92}, {"b", 0.30}, {"c", 0.50}};
  bool down = false;
};

json MovablePod(const std::string& name, const std::string& node, TimeMs started) {
  json pod = testing::TestPod("ml", name, 1, node, "Running",
                              {{"tidal.io/migratable", "true"},
                               {"tidal.io/checkpoint-interval", "15m"},
                               {"ai.gpu-memory", "8Gi"},
                               {"tidal.io/gpus", "0"}});
  pod["metadata"]["labels"] = {{"app", "train"}};
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", name}, {"controller", true}}};
  std::time_t t = started / 1000;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  pod["status"]["startTime"] = buf;
  return pod;
}

struct Fixture {
  Fixture() {
    std::string error;
    kube::Endpoint e = *kube::ParseServerUrl(api.url(), &error);
    e.ca_pem = pki.ca_pem;
    e.token = "secret";
    client = std::make_unique<kube::KubeClient>(e);
    for (const char* n : {"a", "b", "c"}) api.PutNode(testing::TestNode(n, 4));
    api.PutNode(testing::TestNode("cpu-1", 0));  // no GPUs, no agent, no series
    api.PutPod(MovablePod("train-a", "a", clock.NowMs() - 122 * 60'000));
  }
  int Evictions() const {
    int n = 0;
    for (const auto& r : api.requests()) n += r.path.ends_with("/eviction") ? 1 : 0;
    return n;
  }
  testing::TempDir dir;
  testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api{pki, "secret"};
  std::unique_ptr<kube::KubeClient> client;
  ManualClock clock{kStart};
  Source source;
  Runner policy{DefaultPolicyConfig()};
};

TEST(Rebalancer, DryRunSendsNoEviction) {
  Fixture f;
  Rebalancer r(f.policy, f.source, *f.client, f.clock, nullptr, {});
  const Round round = r.RunOnce();
  ASSERT_TRUE(round.status.ok()) << round.status.reason();
  ASSERT_EQ(round.plan.moves.size(), 1u) << FormatPlan(round.plan);
  EXPECT_EQ(round.plan.moves[0].from, "a");
  EXPECT_EQ(f.Evictions(), 0);
  EXPECT_NE(FormatRound(round, false).find("dry run"), std::string::npos);
  // The CPU node is not a GPU node without metrics: LSCS is known.
  EXPECT_EQ(FormatPlan(round.plan).find("cpu-1"), std::string::npos) << FormatPlan(round.plan);
  EXPECT_GE(round.plan.lscs, 0);
}

TEST(Rebalancer, ExecuteEvictsThenCoolsDown) {
  Fixture f;
  Evictor ev(*f.client, f.clock, 2, 60'000);
  Rebalancer r(f.policy, f.source, *f.client, f.clock, &ev, {});
  const Round first = r.RunOnce();
  ASSERT_EQ(first.actions.size(), 1u) << FormatRound(first, true);
  EXPECT_EQ(first.actions[0].result.outcome, EvictionResult::Outcome::kEvicted);
  EXPECT_TRUE(f.api.pod("ml", "train-a").is_null());
  // The same pod (say its eviction is still in progress) a minute later: not again.
  f.api.PutPod(MovablePod("train-a", "a", f.clock.NowMs() - 122 * 60'000));
  f.clock.Advance(60'000);
  const Round second = r.RunOnce();
  EXPECT_TRUE(second.plan.moves.empty()) << FormatPlan(second.plan);
  EXPECT_NE(FormatPlan(second.plan).find("moved 1m ago"), std::string::npos)
      << FormatPlan(second.plan);
  EXPECT_EQ(f.Evictions(), 1);
}

TEST(Rebalancer, HeldMoves) {
  struct Case {
    std::string name;
    std::function<void(Fixture&)> change;
    std::string text;  // in the round's output
    int evictions;
  };
  const std::vector<Case> cases{
      {"a budget allows none",
       [](Fixture& f) {
         f.api.PutPdb({{"apiVersion", "policy/v1"},
                       {"kind", "PodDisruptionBudget"},
                       {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
                       {"spec", {{"selector", {{"matchLabels", {{"app", "train"}}}}}}},
                       {"status", {{"disruptionsAllowed", 0}}}});
       },
       "PodDisruptionBudget ml/train allows no disruption", 0},
      {"the API server answers 429", [](Fixture& f) { f.api.set_evictions_blocked(true); },
       "not now (disruption budget)", 1},
      {"metrics down", [](Fixture& f) { f.source.down = true; }, "no metrics snapshot", 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    c.change(f);
    Evictor ev(*f.client, f.clock, 2, 60'000);
    Rebalancer r(f.policy, f.source, *f.client, f.clock, &ev, {});
    const Round round = r.RunOnce();
    const std::string text = FormatRound(round, true);
    EXPECT_NE(text.find(c.text), std::string::npos) << text;
    EXPECT_EQ(f.Evictions(), c.evictions);
    EXPECT_FALSE(f.api.pod("ml", "train-a").is_null());
  }
}

// The agent's series give no competition index (the DaemonSet's agent does not
// read the kubelet's pods): the round counts the NVLink pods it listed, as the
// extender does from its watch, and a node whose NVLink they fill is no longer
// the target of a pod that uses NVLink.
TEST(Rebalancer, CountsNvlinkPodsWhereTheAgentGivesNoIndex) {
  struct Case {
    const char* name;
    int nvlink_pods_on_b;
    const char* target;
  };
  const Case cases[] = {
      {"b idle: the move goes to b", 0, "b"},
      {"16 NVLink pods on b's 4 GPUs (2 slots each): the move goes to c", 16, "c"}};
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    Fixture f;
    json train = MovablePod("train-a", "a", f.clock.NowMs() - 122 * 60'000);
    train["metadata"]["annotations"]["ai.nvlink-required"] = "true";
    f.api.PutPod(train);
    for (int i = 0; i < tc.nvlink_pods_on_b; ++i)
      f.api.PutPod(testing::TestPod("ml", "ddp-" + std::to_string(i), 1, "b", "Running",
                                    {{"ai.nvlink-required", "true"}}));
    Rebalancer r(f.policy, f.source, *f.client, f.clock, nullptr, {});
    const Round round = r.RunOnce();
    ASSERT_TRUE(round.status.ok()) << round.status.reason();
    ASSERT_EQ(round.plan.moves.size(), 1u) << FormatPlan(round.plan);
    EXPECT_EQ(round.plan.moves[0].to, tc.target) << FormatPlan(round.plan);
  }
}

TEST(Rebalancer, UnreachableApiPlansNothing) {
  kube::Endpoint e;
  e.scheme = "http";
  e.host = "127.0.0.1";
  e.port = 1;
  kube::KubeClient client(e, kube::ClientOptions{200, 200, 200});
  Source source;
  ManualClock clock(kStart);
  const Runner policy(DefaultPolicyConfig());
  Rebalancer r(policy, source, client, clock, nullptr, {});
  const Round round = r.RunOnce();
  EXPECT_FALSE(round.status.ok());
  EXPECT_NE(FormatRound(round, false).find("nothing planned: Kubernetes API"), std::string::npos);
}

}  // namespace
}  // namespace tidal::rebalance
