#include "policy/plugins/balance/balance.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

struct Case {
  const char* name;
  BalanceMode mode;
  double memory;  // node fraction before the pod
  double await_ms;
  double want;
};

TEST(Balance, SpreadAndPackRankByProjectedLoad) {
  // 4 × 24 GiB; the pod adds 1 × 9.6 GiB = 0.1 of the node.
  const Case cases[] = {
      {"spread: an idle node scores highest", BalanceMode::kSpread, 0.0, 0, 100 * (1 - 0.5 * 0.1)},
      {"spread: a half-full node scores lower", BalanceMode::kSpread, 0.5, 0,
       100 * (1 - 0.5 * 0.6)},
      {"spread: await counts, as a fraction of the reject threshold", BalanceMode::kSpread, 0.0,
       67.9, 100 * (1 - 0.5 * 0.1 - 0.2)},
      {"pack: fuller below the warning level scores higher", BalanceMode::kPack, 0.5, 0,
       100 * 0.5 * 0.6},
      {"pack: a node the pod would push past the warning level scores 0", BalanceMode::kPack, 0.65,
       0, 0},
  };
  const PolicyConfig config = DefaultPolicyConfig();
  const PodDemand pod = PodBuilder().Gpus(1).Memory(static_cast<Bytes>(9.6 * kGi)).Build();
  const CycleState cycle = Cycle(config, pod);
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    BalanceArgs args;
    args.mode = tc.mode;
    Balance plugin{args};
    const NodeState node =
        NodeBuilder("n").Gpus(4, 24 * kGi).MemoryFraction(tc.memory).Await(tc.await_ms).Build();
    EXPECT_NEAR(plugin.ScoreOne(cycle, node, NodeScratch{}), tc.want, 1e-6);
  }
}

TEST(Balance, SpreadOrdersNodesLeastLoadedFirst) {
  const PolicyConfig config = DefaultPolicyConfig();
  const PodDemand pod = PodBuilder().Gpus(1).Memory(4 * kGi).Build();
  const CycleState cycle = Cycle(config, pod);
  Balance plugin{BalanceArgs{}};
  double last = 101;
  for (double f : {0.1, 0.2, 0.4, 0.6}) {
    const double s =
        plugin.ScoreOne(cycle, NodeBuilder("n").Gpus(4, 24 * kGi).MemoryFraction(f).Build(), {});
    EXPECT_LT(s, last) << f;
    last = s;
  }
}

TEST(BalanceArgs, Validation) {
  struct ArgsCase {
    const char* name;
    const char* yaml;
    std::vector<std::string> want;
  };
  const ArgsCase cases[] = {
      {"spread", "{mode: spread}", {}},
      {"pack", "{mode: pack}", {}},
      {"unknown mode", "{mode: fill}", {"b.mode: \"fill\" (expected spread or pack)"}},
      {"weights must sum to 1",
       "{weights: {gpuMemory: 1, nvlink: 1, io: 0}}",
       {"b.weights: weights sum to 2, expected 1"}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    auto p = NewBalance(YAML::Load(tc.yaml), "b", errors);
    EXPECT_EQ(errors.items(), tc.want);
    EXPECT_EQ(p == nullptr, !tc.want.empty());
  }
}

}  // namespace
}  // namespace tidal
