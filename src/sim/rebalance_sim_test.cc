// load-aware+rebalance on the disk-degrade scenario (docs/rebalance.md): the
// rebalancer moves work off the node whose disk degraded, rarely (migration
// rate under 0.5 %), and the runs that do not rebalance report exactly what
// they did before (no new fields).
#include <gtest/gtest.h>

#include "tidal/core/status.h"
#include "tidal/metrics/golden.h"
#include "tidal/policy/config.h"
#include "tidal/sim/report.h"
#include "tidal/sim/simulator.h"

namespace tidal::sim {
namespace {

std::string Example(const std::string& rel) {
  return std::string(TIDAL_SOURCE_DIR) + "/examples/" + rel;
}

TEST(Rebalance, DiskDegradeScenario) {
  const ClusterSpec c = LoadCluster(Example("clusters/degrading-disk-8xA10.yaml"));
  const WorkloadSpec w = LoadWorkload(Example("workloads/disk-degrade.yaml"));
  SimOptions o;
  o.seed = 42;
  const PolicyResult plain = Simulate(c, w, MakePolicy("load-aware", DefaultPolicyConfig()), o);
  const PolicyResult moved =
      Simulate(c, w, MakePolicy("load-aware+rebalance", DefaultPolicyConfig()), o);
  EXPECT_EQ(plain.evictions, 0);
  EXPECT_GT(moved.evictions, 0);
  EXPECT_EQ(moved.completed, moved.tasks);
  EXPECT_EQ(plain.completed, plain.tasks);
  EXPECT_LT(MigrationRate(moved.oom_kills + moved.evictions, moved.starts), kMigrationRateHealthy);
  // Moving resumes from a checkpoint: at most 10 minutes of work lost per move.
  EXPECT_LE(moved.work_lost_s, 600.0 * moved.evictions);
  EXPECT_GT(moved.work_lost_s, 0);
  // Every move takes a run off node-08, once its disk has been slow for the
  // sustain window (10 min after it degrades at 1 h), to another node.
  for (const auto& m : moved.moves) {
    SCOPED_TRACE(m.pod);
    EXPECT_EQ(m.from, "node-08");
    EXPECT_NE(m.to, "node-08");
    EXPECT_GE(m.t_s, 4200);
    EXPECT_EQ(m.pod.rfind("ml/long-train-", 0), 0u);
  }
  EXPECT_EQ(static_cast<int>(moved.moves.size()), moved.evictions);
  // The runs stuck on the slow disk finish sooner elsewhere.
  EXPECT_LT(moved.makespan_s, plain.makespan_s);
  RunReport r;
  r.policies = {plain, moved};
  const std::string json = RenderJson(r);
  EXPECT_EQ(json.find("\"evictions\""), json.rfind("\"evictions\""));  // only the rebalancing run
  EXPECT_NE(RenderTable(r).find("evictions (moves)"), std::string::npos);
  EXPECT_NE(RenderTable(r).find("Rebalancing moves (load-aware+rebalance)"), std::string::npos);
  r.policies = {plain};
  EXPECT_EQ(RenderTable(r).find("evictions"), std::string::npos);
  EXPECT_EQ(RenderJson(r).find("evictions"), std::string::npos);
}

// Without a degraded disk nothing stays above a reject threshold; whatever the
// rebalancer then does, the run stays deterministic.
TEST(Rebalance, SameSeedSameRun) {
  const ClusterSpec c = LoadCluster("builtin:seed-8xA10");
  const WorkloadSpec w = LoadWorkload("builtin:seed");
  SimOptions o;
  o.seed = 7;
  const auto policy = MakePolicy("load-aware+rebalance", DefaultPolicyConfig());
  RunReport a, b;
  a.policies = {Simulate(c, w, policy, o)};
  b.policies = {Simulate(c, w, policy, o)};
  EXPECT_EQ(RenderJson(a), RenderJson(b));
}

TEST(Rebalance, SpecErrorsNameTheField) {
  struct Case {
    std::string name, yaml, error;
  } cases[] = {
      {"degrade without its await", "nodes: [{name: n, disk: {baseAwaitMs: 2, degrade: {at: 1h}}}]",
       "degrade.baseAwaitMs"},
      {"degrade at a bad time",
       "nodes: [{name: n, disk: {baseAwaitMs: 2, degrade: {at: soon, baseAwaitMs: 80}}}]",
       "degrade.at"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    try {
      LoadClusterSpec(YAML::Load(tc.yaml), "test");
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(e.message.find(tc.error), std::string::npos) << e.message;
    }
  }
  try {
    LoadWorkloadSpec(
        YAML::Load("classes: [{name: a, count: 1, memory: {context: 1Gi, peak: [2Gi, 2Gi]}, "
                   "checkpoint: 0s, migratable: maybe}]"),
        "test");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message.find("checkpoint"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("migratable"), std::string::npos) << e.message;
  }
}

}  // namespace
}  // namespace tidal::sim
