// The planner on hand-built snapshot histories: each case changes one thing
// from a cluster where node "a" has sat above the GPU-memory reject threshold
// for the whole window and one movable pod on it is cheap to move. The gain
// cases build a node whose disk (or NVLink) slows the pod, and vary how long
// the pod is expected to keep running.
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

NodeMetrics Node(double memory, TimeMs sample_time, double await_ms = 2,
                 double nvlink_competition = 0) {
  NodeMetrics m;
  m.storage_await_ms = await_ms;
  m.nvlink_competition = nvlink_competition;
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

// Like History, with each node's storage await (ms) and NVLink competition index
// (none: 2 ms and 0).
struct Load {
  double memory, await_ms = 2, competition = 0;
};
std::vector<MetricsSnapshot> Loads(const std::map<std::string, Load>& loads) {
  auto out = History([&](int) {
    std::map<std::string, double> m;
    for (const auto& [name, l] : loads) m[name] = l.memory;
    return m;
  });
  for (auto& s : out)
    for (const auto& [name, l] : loads)
      s.nodes[name] = Node(l.memory, s.fetched_at_ms - 5'000, l.await_ms, l.competition);
  return out;
}

// Node a's disk has sat above the await reject threshold (67.9 ms) for the
// window; its memory is fine. The pod waits on storage half its time, so it runs
// 0.5 + 0.5 · 90 / 30 = 2× slower there than on b or c.
void SlowDisk(PlanInput& in, PlannerConfig&) {
  in.snapshots = Loads({{"a", {0.50, 90}}, {"b", {0.30}}, {"c", {0.50}}});
  in.pods[0].demand.annotations["tidal.io/io-share"] = "0.5";
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
      // An imbalance alone slows nobody: the pod on the fullest node runs as fast
      // as it would anywhere, so even a cheap move gains nothing.
      {"LSCS above the limit, pod not slowed: not moved",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = History([](int) {
           return std::map<std::string, double>{{"a", 0.75}, {"b", 0.10}, {"c", 0.10}};
         });
         in.pods[0].demand.annotations["tidal.io/checkpoint-interval"] = "5m";
         in.pods[0].started_ms = kNow - 2 * 60 * kMin - kMin;
       },
       0, "", "pod ml/train-a: not slowed here more than at b: a move gains nothing"},
      {"LSCS above the limit, pod slowed by a busy disk below its threshold: moved",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = Loads({{"a", {0.75, 60}}, {"b", {0.10}}, {"c", {0.10}}});
         in.pods[0].demand.annotations["tidal.io/checkpoint-interval"] = "5m";
         in.pods[0].demand.annotations["tidal.io/io-share"] = "0.5";
         in.pods[0].started_ms = kNow - 2 * 60 * kMin - kMin;
       },
       1, "b", ""},
      {"slow disk: the slowed pod moves", SlowDisk, 1, "b", ""},
      {"slow disk, default IO share of a GPU-heavy pod: still worth it",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations.erase("tidal.io/io-share");
         in.pods[0].demand.load_type = LoadType::kGpuHeavy;  // 0.1: 1.2× slower, 300 > 180
       },
       1, "b", ""},
      {"slow disk, target as slow at one snapshot of the window: not moved",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.snapshots[6].nodes["b"].storage_await_ms = 90;  // quiet now, not throughout
       },
       0, "", "at b up to 2.00×"},
      {"slow disk, pod that waits on no storage: not moved",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations["tidal.io/io-share"] = "0";
       },
       0, "", "a move gains nothing"},
      {"slow disk, 7 min left: 210 GPU·s to gain for a 180 GPU·s move",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations["tidal.io/expected-duration"] = "129m";
       },
       1, "b", ""},
      {"slow disk, one fast sample: only what held through the window counts",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         // 68 ms at one snapshot: still above the threshold, the pod 1.63× slower
         // then. With 7 min left that is 163 GPU·s to gain (2×: 210) for a 180 GPU·s move.
         in.snapshots[3].nodes["a"].storage_await_ms = 68;
         in.pods[0].demand.annotations["tidal.io/expected-duration"] = "129m";
       },
       0, "", "slowdown here 1.63×"},
      {"slow disk, pod near its end (expected duration): not moved",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         // 2 h 2 min run of 2 h 5 min: 3 min left, 90 GPU·s to gain for a 180 GPU·s move.
         in.pods[0].demand.annotations["tidal.io/expected-duration"] = "125m";
       },
       0, "", "expected to run 3m more"},
      {"slow disk, long expected duration: the horizon caps the gain, still moved",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations["tidal.io/expected-duration"] = "10h";
       },
       1, "b", ""},
      {"slow disk, expected end passed: nothing left to gain",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations["tidal.io/expected-end"] = "2001-09-09T01:45:40Z";
       },
       0, "", "expected end in 0s"},
      {"slow disk, expected end wins over the expected duration",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations["tidal.io/expected-duration"] = "125m";
         in.pods[0].demand.annotations["tidal.io/expected-end"] = "2001-09-09T06:46:40Z";
       },
       1, "b", ""},
      {"slow disk, young pod: Lindy counts only the time it has run",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         // 4 min run, no expected duration: 4 min counted at half speed, 120 GPU·s
         // against a 300 GPU·s move (4 min lost, 60 s start-up).
         c.cooldown_ms = 0;
         in.pods[0].started_ms = kNow - 4 * kMin;
       },
       0, "", "ran 4m, no expected duration"},
      {"malformed io-share",
       [](PlanInput& in, PlannerConfig& c) {
         SlowDisk(in, c);
         in.pods[0].demand.annotations["tidal.io/io-share"] = "half";
       },
       0, "", "annotation tidal.io/io-share: \"half\""},
      {"GPU memory above its threshold, pod near its end: the OOM risk is not worth a move",
       [](PlanInput& in, PlannerConfig&) {
         // 2 min left: at most 120 GPU·s of risk against a 180 GPU·s move.
         in.pods[0].demand.annotations["tidal.io/expected-duration"] = "124m";
       },
       0, "", "expected to run 2m more"},
      {"NVLink oversubscribed: the slowed pod moves",
       [](PlanInput& in, PlannerConfig&) {
         // 0.9 NVLink pods per link slot, 2 GPUs each: 1.8× slower; at b 0.25 → 1×.
         in.snapshots = Loads({{"a", {0.50, 2, 0.9}}, {"b", {0.30}}, {"c", {0.50, 2, 0.5}}});
         in.pods[0].demand.gpu_count = 2;
         in.pods[0].demand.nvlink_auto = true;
         in.pods[0].demand.annotations["tidal.io/gpus"] = "0,1";
       },
       1, "b", ""},
      {"NVLink oversubscribed, pod without NVLink: not moved",
       [](PlanInput& in, PlannerConfig&) {
         in.snapshots = Loads({{"a", {0.50, 2, 0.9}}, {"b", {0.30}}, {"c", {0.50, 2, 0.5}}});
       },
       0, "", "a move gains nothing"},
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
         in.nodes.clear();
         for (const char* name : {"a", "b", "c"}) {
           KubeNode n;
           n.name = name;
           n.allocatable_gpus = 4;
           n.unschedulable = n.name == "b";
           in.nodes.push_back(n);
         }
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
  // Not slowed, but at risk of an OOM kill: the target's score over the 30 min
  // the horizon allows of the 2 h it has run.
  EXPECT_DOUBLE_EQ(m.slowdown_from, 1);
  EXPECT_EQ(m.remaining_ms, 30 * kMin);
  EXPECT_DOUBLE_EQ(m.gain_gpu_s, m.target_score / 100 * 1800);
  EXPECT_NE(m.reason.find("OOM risk"), std::string::npos) << m.reason;
  EXPECT_NE(m.reason.find("GPU memory 92% > 82%"), std::string::npos) << m.reason;
  // Node a above its threshold, and the imbalance it makes (LSCS 26 %).
  ASSERT_EQ(plan.triggers.size(), 2u);
  EXPECT_NE(plan.triggers[0].find("node a: GPU memory 92% > 82%"), std::string::npos);
  EXPECT_NE(plan.triggers[1].find("cluster: LSCS 25.8% > 15%"), std::string::npos)
      << plan.triggers[1];
}

TEST(Planner, SlowdownTable) {
  struct Case {
    std::string name;
    double await_ms, competition, io_share;
    int nvlink_gpus;
    double io, nvlink;
  } cases[] = {
      {"idle disk, no NVLink", 2, 0, 0.5, 0, 1, 1},
      {"await at the level where IO-bound work slows", 30, 0, 0.5, 0, 1, 1},
      {"await three times that level, half the time on storage", 90, 0, 0.5, 0, 2, 1},
      {"same await, a pod that barely reads", 90, 0, 0.1, 0, 1.2, 1},
      {"NVLink slots full, not oversubscribed", 2, 0.5, 0.1, 2, 1, 1},
      {"NVLink oversubscribed", 2, 0.9, 0.1, 2, 1, 1.8},
      {"NVLink oversubscribed, the pod does not use it", 2, 0.9, 0.1, 0, 1, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    NodeState n;
    n.storage_await_ms = c.await_ms;
    n.nvlink_competition = c.competition;
    const Slowdown s = EstimateSlowdown(n, c.io_share, c.nvlink_gpus);
    EXPECT_NEAR(s.io, c.io, 1e-9);
    EXPECT_NEAR(s.nvlink, c.nvlink, 1e-9);
    EXPECT_NEAR(s.total(), c.io * c.nvlink, 1e-9);
  }
}

// The gain counts what the pod gains where it is expected to keep running:
// half its time back (2× slower here) over the 30 min the horizon allows.
TEST(Planner, SlowedPodGainsItsSlowdownOverItsRemainingTime) {
  const Runner policy(DefaultPolicyConfig());
  PlanInput in = Base();
  PlannerConfig cfg;
  SlowDisk(in, cfg);
  const Plan plan = MakePlan(policy, cfg, in);
  ASSERT_EQ(plan.moves.size(), 1u) << FormatPlan(plan);
  const Move& m = plan.moves[0];
  EXPECT_DOUBLE_EQ(m.slowdown_from, 2);
  EXPECT_DOUBLE_EQ(m.slowdown_to, 1);
  EXPECT_EQ(m.remaining_ms, 30 * kMin);
  EXPECT_DOUBLE_EQ(m.gain_gpu_s, 900);
  EXPECT_DOUBLE_EQ(m.cost_gpu_s, 180);
  EXPECT_NE(m.reason.find("slowdown here 2.00× (storage await 90 ms > 30 ms, IO share 0.50), "
                          "at b up to 1.00×"),
            std::string::npos)
      << m.reason;
  EXPECT_NE(m.reason.find("ran 122m, no expected duration, counted 30m"), std::string::npos)
      << m.reason;
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
