#include "tidal/extender/view.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace tidal::extender {
namespace {

// A request that still reads the replaced view must not be the one that frees it:
// the store keeps it until the next publish, which frees it on the publisher.
TEST(ViewStore, AReplacedViewIsFreedByTheNextPublishNotByItsLastReader) {
  ViewStore store;
  auto first = std::make_shared<ClusterView>();
  first->generation = 1;
  store.Publish(first);
  std::weak_ptr<const ClusterView> watch_first = store.Load();
  first.reset();
  {
    auto reader = store.Load();  // a request reading the first view
    auto second = std::make_shared<ClusterView>();
    second->generation = 2;
    store.Publish(second);
  }  // the reader is done: the last reference outside the store went here
  EXPECT_FALSE(watch_first.expired()) << "freed by the reader";
  EXPECT_EQ(store.Load()->generation, 2u);
  store.Publish(std::make_shared<ClusterView>());
  EXPECT_TRUE(watch_first.expired()) << "kept after the next publish";
}

// The pod watch marks a pod counted at the generation whose catalog counts it.
// A view built from a copy in between would count the pod's device slot twice
// (the catalog's and the reservation's) until the next change: the put and its
// follow-up are one step for Copy.
TEST(NodeCatalog, ACopySeesAPutAndItsFollowUpTogetherOrNeither) {
  NodeCatalog catalog;
  NodeInfo info;
  info.allocatable_gpus = 8;
  std::atomic<bool> copied{false};
  std::uint64_t marked_at = 0;
  std::thread copier;
  catalog.Put("n1", info, [&](std::uint64_t generation) {
    marked_at = generation;
    copier = std::thread([&] {
      (void)catalog.Copy();
      copied = true;
    });
    // Time for a copier that is not held back to get through.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(copied.load()) << "a Copy ran between the put and its follow-up";
  });
  copier.join();
  EXPECT_TRUE(copied.load());
  EXPECT_EQ(marked_at, catalog.generation());
  // An unchanged put keeps the generation, and still reports it.
  std::uint64_t again = 0;
  catalog.Put("n1", info, [&](std::uint64_t generation) { again = generation; });
  EXPECT_EQ(again, marked_at);
}

// The GPUs bound pods hold, as the fragmentation measure reads them: each pod
// takes one device slot of each of its GPUs, so a GPU with no slot left is wholly
// allocated and one with a slot left is a whole free GPU.
TEST(BuildNodes, AGpuWithNoDeviceSlotLeftIsAllocatedToTheFragmentationMeasure) {
  struct Case {
    const char* name;
    int allocatable;  // nvidia.com/gpu: 4 GPUs × slots
    std::array<std::uint16_t, 4> held;
    std::array<int, 4> want_slots, want_milli;
  };
  const Case cases[] = {
      {"one slot per GPU", 4, {1, 0, 0, 1}, {0, 1, 1, 0}, {0, 1000, 1000, 0}},
      {"two slots per GPU", 8, {1, 2, 0, 0}, {1, 0, 2, 2}, {1000, 0, 1000, 1000}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    MetricsSnapshot snapshot;
    NodeMetrics& m = snapshot.nodes["n"];
    for (int g = 0; g < 4; ++g) {
      Gpu gpu;
      gpu.index = g;
      gpu.memory_total = Bytes{24} << 30;
      m.gpus.push_back(gpu);
    }
    NodeInfo info;
    info.allocatable_gpus = tc.allocatable;
    for (int g = 0; g < 4; ++g) info.pods_on_gpu[g] = tc.held[g];
    std::unordered_map<std::string, NodeState> nodes;
    BuildNodes(&snapshot, {{"n", info}}, &nodes);
    const NodeState& n = nodes.at("n");
    for (int g = 0; g < 4; ++g) {
      EXPECT_EQ(n.gpus[g].free_slots, tc.want_slots[g]) << "GPU " << g;
      EXPECT_EQ(n.gpus[g].milli_free, tc.want_milli[g]) << "GPU " << g;
    }
  }
}

}  // namespace
}  // namespace tidal::extender
