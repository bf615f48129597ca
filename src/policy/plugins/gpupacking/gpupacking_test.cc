#include "policy/plugins/gpupacking/gpupacking.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(GpuPacking, Tiers) {
  struct Case {
    const char* name;
    std::vector<int> free;
    int gpus, milli;
    double want;
  };
  const Case cases[] = {
      {"idle 8-GPU node",
       {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000},
       1,
       500,
       25},                                           // max(33-8, 8)
      {"idle 2-GPU node", {1000, 1000}, 1, 500, 31},  // max(33-2, 2)
      // Least free first: GPU 3 (0) is too small, GPU 1 (500) takes it: 100 − 50/10.
      {"shared GPU", {1000, 500, 1000, 0}, 1, 300, 95},
      {"one free GPU of a used node", {1000, 500, 1000, 0}, 1, 1000, 49},
      {"two free GPUs of a used node", {1000, 500, 1000, 0}, 2, 1000, 48},
      {"CPU-only pod", {1000}, 0, 0, 0},
  };
  GpuPacking plugin;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node = NodeBuilder("n").MilliFree(tc.free).Build();
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Build();
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(Cycle(DefaultPolicyConfig(), pod), node, {}), tc.want);
  }
}

TEST(GpuPacking, TakesNoArgs) {
  ConfigErrors errors;
  EXPECT_EQ(NewGpuPacking(YAML::Load("[1]"), "p", errors), nullptr);
  EXPECT_EQ(errors.items(), std::vector<std::string>{"p: gpupacking takes no args"});
}

}  // namespace
}  // namespace tidal
