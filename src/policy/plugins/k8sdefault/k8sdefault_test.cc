#include "policy/plugins/k8sdefault/k8sdefault.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

struct Case {
  const char* name;
  NodeState node;
  PodDemand pod;
  std::int64_t want_least;
  std::int64_t want_balanced;
};

TEST(K8sDefault, MatchesKubeSchedulerFormulas) {
  // 16 cores, 64 GiB, 8 advertised GPUs (4 physical, time-sliced ×2).
  const Case cases[] = {
      {"empty node, 1 GPU pod of 2 CPU / 8 GiB",
       NodeBuilder("n").Gpus(4, 24 * kGi).Allocatable(8).Resources(16000, 64 * kGi).Build(),
       PodBuilder().Gpus(1).Requests(2000, 8 * kGi).Build(),
       // (87 + 87 + 87) / 3; fractions all 0.125: sd 0
       87, 100},
      {"half-allocated GPUs, light CPU",
       NodeBuilder("n")
           .Gpus(4, 24 * kGi)
           .Allocatable(8, 4)
           .Resources(16000, 64 * kGi, 4000, 16 * kGi)
           .Build(),
       PodBuilder().Gpus(2).Requests(2000, 8 * kGi).Build(),
       // cpu (16000-6000)*100/16000 = 62, mem (64-24)*100/64 = 62, gpu (8-6)*100/8 = 25 → 149/3 =
       // 49; fractions 0.375, 0.375, 0.75: population sd 0.177 → 82
       49, 82},
      {"a pod without requests counts 100m and 200Mi for LeastAllocated only",
       NodeBuilder("n").Gpus(4, 24 * kGi).Allocatable(8).Resources(1000, 1 * kGi).Build(),
       PodBuilder().Gpus(0).Build(),
       // cpu (1000-100)*100/1000 = 90, mem (1024-200)*100/1024 = 80 → 85; balanced on zeros: 100
       85, 100},
      {"over-committed GPUs score 0 for that resource",
       NodeBuilder("n").Gpus(4, 24 * kGi).Allocatable(8, 8).Resources(16000, 64 * kGi).Build(),
       PodBuilder().Gpus(1).Requests(0, 0).Build(),
       // cpu 99 (100m default), mem 99, gpu 0 → 66; fractions 0, 0, 1 → sd 0.4714 → 52
       66, 52},
  };
  K8sDefault plugin{K8sDefaultArgs{}};
  const PolicyConfig config = DefaultPolicyConfig();
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(plugin.LeastAllocated(tc.pod, tc.node), tc.want_least);
    EXPECT_EQ(plugin.BalancedAllocation(tc.pod, tc.node), tc.want_balanced);
    const CycleState cycle = Cycle(config, tc.pod);
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, tc.node, {}), (tc.want_least + tc.want_balanced) / 2.0);
  }
}

TEST(K8sDefault, SeesNoMemoryAtAll) {
  // The blind spot Tidal exists for: real GPU memory does not change the score.
  K8sDefault plugin{K8sDefaultArgs{}};
  const PodDemand pod = PodBuilder().Gpus(1).Requests(1000, 4 * kGi).Build();
  const NodeState idle =
      NodeBuilder("a").Gpus(4, 24 * kGi).Allocatable(8, 2).Resources(16000, 64 * kGi).Build();
  const NodeState full = NodeBuilder("b")
                             .Gpus(4, 24 * kGi)
                             .MemoryFraction(0.97)
                             .Allocatable(8, 2)
                             .Resources(16000, 64 * kGi)
                             .Build();
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, idle, {}), plugin.ScoreOne(cycle, full, {}));
}

}  // namespace
}  // namespace tidal
