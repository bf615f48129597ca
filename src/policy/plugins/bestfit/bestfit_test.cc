#include "policy/plugins/bestfit/bestfit.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(BestFit, FullestNodeWins) {
  struct Case {
    const char* name;
    int allocatable, requested, pod_gpus;
    double want;
  };
  const Case cases[] = {
      {"empty node", 8, 0, 1, 12},
      {"half full", 8, 4, 2, 75},
      {"the pod fills it", 8, 7, 1, 100},
      {"no advertised GPUs", 0, 0, 1, 0},
  };
  BestFit plugin;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const PodDemand pod = PodBuilder().Gpus(tc.pod_gpus).Build();
    const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
    const NodeState node =
        NodeBuilder("n").Gpus(4, 24 * kGi).Allocatable(tc.allocatable, tc.requested).Build();
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, {}), tc.want);
  }
}

TEST(BestFit, TakesNoArgs) {
  ConfigErrors errors;
  EXPECT_EQ(NewBestFit(YAML::Load("{x: 1}"), "plugins.bestfit.args", errors), nullptr);
  EXPECT_EQ(errors.items(),
            std::vector<std::string>{"plugins.bestfit.args: bestfit takes no args"});
}

}  // namespace
}  // namespace tidal
