#include "policy/plugins/dotprod/dotprod.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(DotProd, SmallerAlignmentScoresHigher) {
  struct Case {
    const char* name;
    std::int64_t cpu_left;
    std::vector<int> free;
    int gpus, milli;
    double want;
  };
  const Case cases[] = {
      // (64000/128000)·(8000/128000) + (4000/8000)·(500/8000) = 0.0625: trunc(100·(1 − 0.03125))
      // = 96.
      {"half-free node", 64000, {1000, 1000, 1000, 1000, 0, 0, 0, 0}, 1, 500, 96},
      // (128000/128000)·(8000/128000) + 1·(8000/8000) = 1.0625: trunc(46.875) = 46.
      {"idle big node, 8-GPU pod",
       128000,
       {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000},
       8,
       1000,
       46},
      {"CPU short", 4000, {1000}, 1, 500, 0},
  };
  DotProd plugin;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node =
        NodeBuilder("n").MilliFree(tc.free).Resources(tc.cpu_left, 64 * kGi).Build();
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Requests(8000, 0).Build();
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(Cycle(DefaultPolicyConfig(), pod), node, {}), tc.want);
  }
}

TEST(DotProd, TakesNoArgs) {
  ConfigErrors errors;
  EXPECT_EQ(NewDotProd(YAML::Load("{x: 1}"), "p", errors), nullptr);
  EXPECT_EQ(errors.items(), std::vector<std::string>{"p: dotprod takes no args"});
}

}  // namespace
}  // namespace tidal
