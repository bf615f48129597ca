#include "policy/plugins/gpuclustering/gpuclustering.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(GpuClustering, Bands) {
  struct Case {
    const char* name;
    std::uint64_t kinds;  // bit 0 sharing, bit n: n whole GPUs
    int gpus, milli;
    double want;
  };
  // 6000 of 8000 milli-GPU free: fill = 25 · 2000 / 8000 = 6.
  const Case cases[] = {
      {"only sharing pods here", 1, 1, 500, 81},
      {"sharing among others", 1 | 2, 1, 500, 56},
      {"idle node", 0, 1, 500, 31},
      {"other kinds only", 2, 1, 500, 6},
      {"2-GPU pod next to 2-GPU pods", 4, 2, 1000, 81},
      {"CPU-only pod", 1, 0, 0, 0},
  };
  GpuClustering plugin;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node = NodeBuilder("n")
                               .MilliFree({1000, 1000, 1000, 1000, 1000, 1000, 0, 0})
                               .PodKinds(tc.kinds)
                               .Build();
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Build();
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(Cycle(DefaultPolicyConfig(), pod), node, {}), tc.want);
  }
}

TEST(GpuClustering, TakesNoArgs) {
  ConfigErrors errors;
  EXPECT_EQ(NewGpuClustering(YAML::Load("{x: 1}"), "p", errors), nullptr);
  EXPECT_EQ(errors.items(), std::vector<std::string>{"p: gpuclustering takes no args"});
}

}  // namespace
}  // namespace tidal
