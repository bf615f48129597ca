#include "policy/plugins/resourcefit/resourcefit.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(ResourceFit, RejectsOnRequestsNotUsage) {
  struct Case {
    const char* name;
    NodeState node;
    PodDemand pod;
    bool want_fit;
    const char* want_reason;
  };
  const Case cases[] = {
      {"free advertised GPUs fit even when memory is full",
       NodeBuilder("n").Gpus(4, 24 * kGi).MemoryFraction(0.99).Allocatable(8, 6).Build(),
       PodBuilder().Gpus(2).Build(), true, ""},
      {"advertised GPUs exhausted", NodeBuilder("n").Gpus(4, 24 * kGi).Allocatable(8, 7).Build(),
       PodBuilder().Gpus(2).Build(), false,
       "Insufficient nvidia.com/gpu (7 of 8 allocated, pod asks 2)"},
      {"cpu exhausted",
       NodeBuilder("n").Gpus(4, 24 * kGi).Resources(4000, 64 * kGi, 3500, 0).Build(),
       PodBuilder().Gpus(1).Requests(1000, 0).Build(), false, "Insufficient cpu"},
      {"memory exhausted",
       NodeBuilder("n").Gpus(4, 24 * kGi).Resources(4000, 8 * kGi, 0, 6 * kGi).Build(),
       PodBuilder().Gpus(1).Requests(100, 4 * kGi).Build(), false, "Insufficient memory"},
      {"unknown allocatable counts physical GPUs", NodeBuilder("n").Gpus(4, 24 * kGi).Build(),
       PodBuilder().Gpus(4).Build(), true, ""},
  };
  ResourceFit plugin;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CycleState cycle = Cycle(DefaultPolicyConfig(), tc.pod);
    NodeScratch scratch;
    const Status s = plugin.FilterOne(cycle, tc.node, scratch);
    EXPECT_EQ(s.ok(), tc.want_fit) << s.reason();
    if (!tc.want_fit) {
      EXPECT_EQ(s.reason(), tc.want_reason);
    }
  }
}

}  // namespace
}  // namespace tidal
