#include "sim/device_plugin.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace tidal::sim {
namespace {

// NVIDIA's stock rule as the simulator models it: the least-shared GPU first,
// counted in replicas held, the lowest index on ties, one replica at a time.
TEST(LeastSharedGpus, PicksAsTheStockDevicePlugin) {
  struct Case {
    const char* name;
    std::vector<int> held;  // replicas already held, per GPU
    int replicas;           // per GPU
    int count;              // replicas the pod asks for
    std::optional<std::vector<int>> want;
  };
  const Case cases[] = {
      {"empty node: the lowest index", {0, 0, 0, 0}, 2, 1, std::vector<int>{0}},
      {"the fewest replicas held wins", {1, 1, 0, 1}, 2, 1, std::vector<int>{2}},
      {"ties go to the lowest index", {2, 1, 1, 2}, 3, 1, std::vector<int>{1}},
      // GPU 0 holds one pod with two replicas: it counts twice, not once.
      {"replicas are counted, not pods", {2, 1}, 4, 1, std::vector<int>{1}},
      {"a GPU with every replica held is skipped", {2, 1}, 2, 1, std::vector<int>{1}},
      {"without time-slicing, the first free GPU", {1, 0, 1, 0}, 1, 1, std::vector<int>{1}},
      // Each replica taken counts before the next is chosen.
      {"a pod of 2 GPUs on an empty node", {0, 0, 0, 0}, 2, 2, std::vector<int>{0, 1}},
      {"a pod of 2 GPUs takes the two least shared", {1, 0, 1, 0}, 2, 2, std::vector<int>{1, 3}},
      // GPU 0 is still (tied) least shared after its first replica is taken.
      {"a pod of 2 GPUs may get one GPU twice", {0, 1, 1, 1}, 2, 2, std::vector<int>{0, 0}},
      {"a pod of 2 GPUs with one replica free", {2, 1}, 2, 2, std::nullopt},
      {"a pod of no GPU gets none", {2, 2}, 2, 0, std::vector<int>{}},
      {"a full node", {1, 1}, 1, 1, std::nullopt},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(LeastSharedGpus(tc.held, tc.replicas, tc.count), tc.want);
  }
}

}  // namespace
}  // namespace tidal::sim
