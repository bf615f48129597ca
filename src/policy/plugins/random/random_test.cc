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

// The simulators pass their 64-bit seeds (--seed, --seeds) as this arg: any of
// 0..2^64−1 is taken as written, anything else is reported.
TEST(Random, SeedArgTakesAny64BitSeed) {
  struct Case {
    const char* name;
    const char* yaml;
    std::uint64_t want;  // when `error` is empty
    std::string error;
  };
  const std::string range = "p.seed: expected an integer in 0..18446744073709551615";
  const Case cases[] = {
      {"absent: the default", "{}", 42, ""},
      {"zero", "{seed: 0}", 0, ""},
      {"past 32 bits", "{seed: 4294967296}", 4294967296ULL, ""},
      {"largest", "{seed: 18446744073709551615}", 18446744073709551615ULL, ""},
      {"negative", "{seed: -1}", 0, "p.seed: -1 (expected a number >= 0)"},
      {"past 64 bits", "{seed: 18446744073709551616}", 0, range},
      {"fraction", "{seed: 1.5}", 0, range},
      {"exponent", "{seed: 1e3}", 0, range},
      {"text", "{seed: abc}", 0, range},
      {"list", "{seed: [1]}", 0, range},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    const RandomArgs a = RandomArgs::Parse(YAML::Load(tc.yaml), "p", errors);
    if (tc.error.empty()) {
      EXPECT_TRUE(errors.empty());
      EXPECT_EQ(a.seed, tc.want);
    } else {
      EXPECT_EQ(errors.items(), std::vector<std::string>{tc.error});
    }
  }
}

}  // namespace
}  // namespace tidal
