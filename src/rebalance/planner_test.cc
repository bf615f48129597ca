// The planner on hand-built snapshot histories: each case changes one thing
// from a cluster where node "a" has sat above the GPU-memory reject threshold
// for the whole window and one movable pod on it is cheap to move.
#include "tidal/rebalance/planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tidal/policy/config.h"

namespace tidal::rebalance {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;
constexpr TimeMs kNow = 1'000'000'000'000;
constexpr TimeMs kMin = 60'000;

NodeMetrics Node(double memory, TimeMs sample_time) {
  NodeMetrics m;
  for (int g = 0; g < 4; ++g) {
    Gpu gpu;
    gpu.index = g;
    gpu.model = "A10";
    gpu.memory_total = 24 * kGi;
    gpu.memory_used = static_cast<Bytes>(memory * 24 * static_cast<double>(kGi));
    m.gpus.push_back(gpu);
  }
  m.sample_time_ms = sample_time;
  return m;
}

// One snapshot a minute over the last ten minutes, node loads from `load(t)`.
std::vector<MetricsSnapshot> History(
    const std::function<std::map<std::string, double>(int)>& load) {
  std::vector<MetricsSnapshot> out;
  for (int i = 10; i >= 0; --i) {
    MetricsSnapshot s;
    s.fetched_at_ms = kNow - i * kMin;
    for (const auto& [name, u] : load(i)) s.nodes[name] = Node(u, s.fetched_at_ms - 5'000);
    out.push_back(std::move(s));
  }
  return out;
}

PodInfo Pod(const std::string& name, const std::string& node, Labels extra = {}) {
  PodInfo p;
  p.demand.namespace_name = "ml";
  p.demand.name = name;
  p.demand.gpu_count = 1;
  p.demand.gpu_memory_per_gpu = 8 * kGi;
  p.demand.gpu_memory_declared = true;
  p.demand.labels = {{"app", "train"}};
  p.demand.annotations = {{"tidal.io/migratable", "true"},
                          {"tidal.io/checkpoint-interval", "15m"},
                          {"tidal.io/startup-seconds", "60"},
                          {"tidal.io/gpus", "0"}};
  for (const auto& [k, v] : extra) p.demand.annotations[k] = v;
  p.node = node;
  p.phase = "Running";
  p.owner = "Job/" + name;
  p.started_ms = kNow - 2 * 60 * kMin - 2 * kMin;  // 2 min since its last checkpoint
  return p;
}

PlanInput Base() {
  PlanInput in;
  in.now_ms = kNow;
  in.snapshots = History([](int) {
    return std::map<std::string, double>{{"a", 0.92}, {"b", 0.30}, {"c", 0.50}};
  });
  in.pods = {Pod("train-a", "a")};
  return in;
}

bool Has(const std::vector<Skip>& skips, const std::string& text) {
  for (const auto& s : skips)
    if ((s.subject + ": " + s.reason).find(text) != std::string::npos) return true;
  return false;
}

TEST(Planner, Table) {
  struct Case {
    std::string name;
    std::function<void(PlanInput&, PlannerConfig&)> change;
    int moves;
    std::string to;    // the first move's target, when moves > 0
    std::string skip;  // a skip that must be there ("" none required)
    bool metrics_ok = true;
  };
  const std::vector<Case> cases{
      {"sustained hot node moves its pod to the least loaded", [](auto&, auto&) {}, 1, "b", ""},
      {"one noisy sample moves nothing",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots[4].nodes["a"] = Node(0.60, in.snapshots[4].fetched_at_ms - 5'000);
       },
       0, "", ""},
      {"stale source: its newest sample is old",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots.back().nodes["a"].sample_time_ms = kNow - 5 * kMin;
       },
       0, "", "node a: metrics stale or missing (sample 5m old"},
      {"stale reading repeated through the window",
       [](PlanInput& in, PlannerConfig&) {
         for (auto& s : in.snapshots) s.nodes["a"].sample_time_ms = kNow - 11 * kMin;
       },
       0, "", "node a: metrics stale"},
      {"missing source series",
       [](PlanInput& in, PlannerConfig&) { in.snapshots.back().nodes.erase("a"); }, 0, "",
       "node a: metrics stale or missing (no series)"},
      {"unusable source reading",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots.back().nodes["a"].usable = false;
         in.snapshots.back().nodes["a"].problems = {"NaN memory"};
       },
       0, "", "unusable reading: NaN memory"},
      {"no fresh snapshot at all", [](PlanInput& in, PlannerConfig&) { in.now_ms += 5 * kMin; }, 0,
       "", "newest snapshot is 5m old", false},
      {"no snapshot", [](PlanInput& in, PlannerConfig&) { in.snapshots.clear(); }, 0, "",
       "no metrics snapshot", false},
      {"a gap in the history",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots.erase(in.snapshots.begin() + 3, in.snapshots.begin() + 8);
       },
       0, "", "gap"},
      {"history shorter than the window",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots.erase(in.snapshots.begin(), in.snapshots.begin() + 6);
       },
       0, "", "covers 4m of the 10m"},
      {"stale least-loaded node is not a target",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots.back().nodes["b"].sample_time_ms = kNow - 10 * kMin;
       },
       1, "c", "node b: metrics stale"},
      {"not movable",
       [](PlanInput& in, PlannerConfig&) {
         in.pods[0].demand.annotations.erase("tidal.io/migratable");
       },
       0, "", "pod ml/train-a: not movable"},
      {"malformed checkpoint annotation",
       [](PlanInput& in, PlannerConfig&) {
         in.pods[0].demand.annotations["tidal.io/checkpoint-interval"] = "often";
       },
       0, "", "annotation tidal.io/checkpoint-interval: \"often\""},
      {"no controller", [](PlanInput& in, PlannerConfig&) { in.pods[0].owner.clear(); }, 0, "",
       "no controller"},
      {"budget allows none",
       [](PlanInput& in, PlannerConfig&) {
         in.budgets.push_back({"ml", "train", {{"app", "train"}}, false, 0});
       },
       0, "", "PodDisruptionBudget ml/train allows no disruption"},
      {"budget of another namespace does not apply",
       [](PlanInput& in, PlannerConfig&) {
         in.budgets.push_back({"other", "train", {{"app", "train"}}, false, 0});
       },
       1, "b", ""},
      {"budget with expressions covers the namespace",
       [](PlanInput& in, PlannerConfig&) {
         in.budgets.push_back({"ml", "any", {{"app", "serve"}}, true, 0});
       },
       0, "", "PodDisruptionBudget ml/any"},
      {"budget allows one across two hot nodes",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.92}, {"b", 0.30}, {"c", 0.50}, {"d", 0.95}};
         });
         in.pods.push_back(Pod("train-d", "d"));
         in.budgets.push_back({"ml", "train", {{"app", "train"}}, false, 1});
       },
       1, "b", "pod ml/train-a: PodDisruptionBudget ml/train allows no disruption"},
      {"two hot nodes, two moves",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.92}, {"b", 0.30}, {"c", 0.50}, {"d", 0.95}};
         });
         in.pods.push_back(Pod("train-d", "d"));
       },
       2, "b", ""},
      {"max moves",
       [](PlanInput& in, PlannerConfig& c) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.92}, {"b", 0.30}, {"c", 0.50}, {"d", 0.95}};
         });
         in.pods.push_back(Pod("train-d", "d"));
         c.max_moves = 1;
       },
       1, "b", "node a: the plan already has 1 moves"},
      {"moved within the cooldown",
       [](PlanInput& in, PlannerConfig&) { in.moved_at_ms["ml/Job/train-a"] = kNow - 10 * kMin; },
       0, "", "moved 10m ago (cooldown 30m)"},
      {"moved before the cooldown",
       [](PlanInput& in, PlannerConfig&) { in.moved_at_ms["ml/Job/train-a"] = kNow - 40 * kMin; },
       1, "b", ""},
      {"started within the cooldown",
       [](PlanInput& in, PlannerConfig&) { in.pods[0].started_ms = kNow - 5 * kMin; }, 0, "",
       "started 5m ago"},
      {"gain below cost: no checkpoint, hours of work",
       [](PlanInput& in, PlannerConfig&) {
         in.pods[0].demand.annotations.erase("tidal.io/checkpoint-interval");
       },
       0, "", "does not beat"},
      {"gain below cost: long start-up",
       [](PlanInput& in, PlannerConfig&) {
         in.pods[0].demand.annotations["tidal.io/startup-seconds"] = "2h";
       },
       0, "", "start-up 2h"},
      {"no target fits: every other node full",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.92}, {"b", 0.97}, {"c", 0.97}};
         });
       },
       0, "", "pod ml/train-a: no node fits it"},
      {"cool node: nothing to do",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.40}, {"b", 0.30}, {"c", 0.50}};
         });
       },
       0, "", ""},
      {"LSCS above the limit for the window moves a cheap pod",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.75}, {"b", 0.10}, {"c", 0.10}};
         });
         in.pods[0].demand.annotations["tidal.io/checkpoint-interval"] = "5m";
         in.pods[0].started_ms = kNow - 2 * 60 * kMin - kMin;
       },
       1, "b", ""},
      {"LSCS above the limit with one noisy dip",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int i) {
           return std::map<std::string, double>{
               {"a", i == 5 ? 0.2 : 0.75}, {"b", 0.10}, {"c", 0.10}};
         });
         in.pods[0].demand.annotations["tidal.io/checkpoint-interval"] = "5m";
       },
       0, "", ""},
      {"LSCS unknown with a stale node",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.75}, {"b", 0.10}, {"c", 0.10}};
         });
         in.snapshots.back().nodes["c"].sample_time_ms = kNow - 10 * kMin;
       },
       0, "", "LSCS unknown"},
      {"cordoned node is not a target",
       [](PlanInput& in, PlannerConfig&) {
         in.nodes = {{"a", {}, 4, false}, {"b", {}, 4, true}, {"c", {}, 4, false}};
       },
       1, "c", ""},
  };
  const Runner policy(DefaultPolicyConfig());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    PlanInput in = Base();
    PlannerConfig cfg;
    c.change(in, cfg);
    ASSERT_TRUE(Validate(cfg).empty());
    const Plan plan = MakePlan(policy, cfg, in);
    SCOPED_TRACE(FormatPlan(plan));
    EXPECT_EQ(plan.metrics_ok, c.metrics_ok);
    ASSERT_EQ(static_cast<int>(plan.moves.size()), c.moves);
    if (c.moves > 0) {
      EXPECT_EQ(plan.moves[0].to, c.to);
      EXPECT_GT(plan.moves[0].gain_gpu_s, plan.moves[0].cost_gpu_s);
      EXPECT_FALSE(plan.moves[0].reason.empty());
    }
    if (!c.skip.empty()) {
      EXPECT_TRUE(Has(plan.skipped, c.skip)) << c.skip;
    }
    // Determinism: the same input gives the same plan.
    EXPECT_EQ(FormatPlan(MakePlan(policy, cfg, in)), FormatPlan(plan));
  }
}

TEST(Planner, MoveCarriesItsReasonAndCost) {
  const Runner policy(DefaultPolicyConfig());
  const Plan plan = MakePlan(policy, PlannerConfig{}, Base());
  ASSERT_EQ(plan.moves.size(), 1u);
  const Move& m = plan.moves[0];
  EXPECT_EQ(m.pod, "ml/train-a");
  EXPECT_EQ(m.owner_key, "ml/Job/train-a");
  EXPECT_EQ(m.from, "a");
  // 2 min since the last checkpoint + 60 s start-up, on one GPU.
  EXPECT_DOUBLE_EQ(m.cost_gpu_s, 180);
  EXPECT_NE(m.reason.find("GPU memory 92% > 82%"), std::string::npos) << m.reason;
  // Node a above its threshold, and the imbalance it makes (LSCS 26 %).
  ASSERT_EQ(plan.triggers.size(), 2u);
  EXPECT_NE(plan.triggers[0].find("node a: GPU memory 92% > 82%"), std::string::npos);
  EXPECT_NE(plan.triggers[1].find("cluster: LSCS 25.8% > 15%"), std::string::npos)
      << plan.triggers[1];
}

TEST(Planner, ValidateNamesEveryBadSetting) {
  PlannerConfig c;
  c.sustain_ms = 0;
  c.lscs_limit = 2;
  c.max_moves = -1;
  c.min_gain_over_cost = std::nan("");
  const auto errors = Validate(c);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("sustain"), std::string::npos);
  EXPECT_NE(errors[1].find("lscs-limit"), std::string::npos);
}

}  // namespace
}  // namespace tidal::rebalance
