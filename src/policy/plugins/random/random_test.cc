#include "policy/plugins/random/random.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(Random, PureAndInRange) {
  RandomScore a({42}), b({43});
  const PodDemand pod = PodBuilder("p1").Build();
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  const NodeState n1 = NodeBuilder("n1").Build(), n2 = NodeBuilder("n2").Build();
  const double s1 = a.ScoreOne(cycle, n1, {});
  EXPECT_EQ(s1, a.ScoreOne(cycle, n1, {}));  // same inputs, same score
  EXPECT_NE(s1, a.ScoreOne(cycle, n2, {}));
  EXPECT_NE(s1, b.ScoreOne(cycle, n1, {}));
  EXPECT_GE(s1, 0);
  EXPECT_LT(s1, 100);
}

TEST(Random, TheBestNodeIsUniform) {
  // 4000 pods over 4 nodes: each node should win about 1000 times (binomial sd ≈ 27).
  RandomScore plugin({7});
  std::vector<NodeState> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(NodeBuilder("node-" + std::to_string(i)).Build());
  int wins[4] = {};
  for (int p = 0; p < 4000; ++p) {
    const PodDemand pod = PodBuilder("pod-" + std::to_string(p)).Build();
    const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
    int best = 0;
    double best_score = -1;
    for (int i = 0; i < 4; ++i) {
      const double s = plugin.ScoreOne(cycle, nodes[i], {});
      if (s > best_score) {
        best_score = s;
        best = i;
      }
    }
    ++wins[best];
  }
  for (int w : wins) {
    EXPECT_GT(w, 850);
    EXPECT_LT(w, 1150);
  }
}

TEST(Random, Args) {
  ConfigErrors errors;
  EXPECT_NE(NewRandomScore(YAML::Load("{seed: 5}"), "p", errors), nullptr);
  EXPECT_EQ(NewRandomScore(YAML::Load("{seed: -1}"), "p", errors), nullptr);
  EXPECT_EQ(errors.items(), std::vector<std::string>{"p.seed: -1 (expected a number >= 0)"});
}

// The seed arg is read as every plugin's (yamlutil::ReadSeed, seed_arg_test.cc):
// here, its default and that a 64-bit seed reaches the args.
TEST(Random, SeedArgIsA64BitSeed) {
  ConfigErrors errors;
  EXPECT_EQ(RandomArgs::Parse(YAML::Load("{}"), "p", errors).seed, 42U);
  EXPECT_EQ(RandomArgs::Parse(YAML::Load("{seed: 18446744073709551615}"), "p", errors).seed,
            18446744073709551615ULL);
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace tidal
