#include "policy/plugins/fallback/fallback.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

struct Outcome {
  std::vector<Status> status;
  std::vector<double> scores;
};

Outcome Evaluate(const Fallback& plugin, const std::vector<NodeState>& nodes) {
  const PodDemand pod = PodBuilder().Gpus(1).Build();
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  std::vector<const NodeState*> ptrs;
  for (const auto& n : nodes) ptrs.push_back(&n);
  std::vector<NodeScratch> scratch(nodes.size());
  Outcome r{std::vector<Status>(nodes.size()), std::vector<double>(nodes.size(), -1)};
  plugin.FilterBatch(cycle, ptrs, scratch, std::span<Status>(r.status), false);
  plugin.ScoreBatch(cycle, ptrs, scratch, std::span<const Status>(r.status), r.scores);
  return r;
}

std::vector<NodeState> Cluster() {
  return {NodeBuilder("free-8").Gpus(8, 24 * kGi).Allocatable(8, 0).Build(),
          NodeBuilder("free-2")
              .Gpus(4, 24 * kGi)
              .Allocatable(4, 2)
              .Label("tidal.io/pool", "golden")
              .Build(),
          NodeBuilder("full")
              .Gpus(4, 24 * kGi)
              .Allocatable(4, 4)
              .Label("tidal.io/pool", "golden")
              .Build(),
          NodeBuilder("over").Gpus(4, 24 * kGi).Allocatable(4, 6).Build()};
}

TEST(Fallback, StageOneRanksByRemainingGpusMostFirst) {
  const Outcome r = Evaluate(Fallback(FallbackArgs{}), Cluster());
  for (const auto& s : r.status) EXPECT_TRUE(s.ok()) << "stage 1 rejects nothing itself";
  EXPECT_EQ(r.scores, (std::vector<double>{100, 25, 0, 0}));
}

TEST(Fallback, StageTwoAdmitsOnlyTheGoldenPool) {
  FallbackArgs args;
  args.stage = 2;
  const Outcome r = Evaluate(Fallback(args), Cluster());
  struct Want {
    const char* node;
    bool ok;
    double score;
  };
  const Want want[] = {
      {"free-8", false, -1}, {"free-2", true, 100}, {"full", true, 0}, {"over", false, -1}};
  for (std::size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(want[i].node);
    EXPECT_EQ(r.status[i].ok(), want[i].ok);
    EXPECT_DOUBLE_EQ(r.scores[i], want[i].score);
    if (!want[i].ok) {
      EXPECT_EQ(r.status[i].reason(),
                "metrics unavailable (fallback stage 2): only the golden pool tidal.io/pool=golden "
                "is used");
    }
  }
}

TEST(Fallback, ArgsValidation) {
  struct Case {
    const char* name;
    const char* yaml;
    std::vector<std::string> errors;
  };
  const Case cases[] = {
      {"defaults", "{}", {}},
      {"stage 2 with a pool", "{stage: 2, goldenPool: {gpu: a100}}", {}},
      {"stage 3", "{stage: 3}", {"a.stage: 3 (expected 1 or 2)"}},
      {"stage 2 without a pool",
       "{stage: 2, goldenPool: {}}",
       {"a.goldenPool: empty (stage 2 needs a label selector for the golden pool)"}},
      {"unknown key",
       "{stages: 2}",
       {"a.stages: unknown field (expected one of: stage, goldenPool)"}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    auto p = NewFallback(YAML::Load(tc.yaml), "a", errors);
    EXPECT_EQ(errors.items(), tc.errors);
    EXPECT_EQ(p == nullptr, !tc.errors.empty());
  }
}

}  // namespace
}  // namespace tidal
