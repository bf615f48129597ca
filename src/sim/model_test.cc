#include "sim/model.h"

#include <gtest/gtest.h>

namespace tidal::sim {
namespace {

// One node of two NVLinked GPUs (24 GiB each), `jobs` 2-GPU NVLink tasks on both.
struct OneNode {
  ClusterSpec cluster;
  TaskClass cls;
  std::vector<Task> tasks;

  OneNode(int slots, int jobs) {
    NodeSpec n;
    n.name = "a";
    n.gpu_count = 2;
    n.links = {{0, 4}, {4, 0}};
    n.nvlink_slots_per_gpu = slots;
    cluster.nodes = {n};
    cls.gpus = 2;
    cls.uses_nvlink = true;
    cls.compute_duty = 0.1;
    cls.startup_ms = 0;
    cls.memory_context = Bytes{1} << 30;
    for (int i = 0; i < jobs; ++i) {
      Task t;
      t.id = i;
      t.cls = &cls;
      t.state = Task::State::kRunning;
      t.node = 0;
      t.gpus = {0, 1};
      t.started_ms = i;  // the last is the newest
      t.peak = Bytes{8} << 30;
      t.duration_s = 100;
      tasks.push_back(t);
    }
  }
};

TEST(RuntimeModel, NvlinkJobsBeyondTheClustersSlotsShareTheLinks) {
  struct Case {
    const char* name;
    int slots, jobs;
    double progress_s;  // after one second
  };
  const Case cases[] = {
      {"within the slots", 2, 2, 1.0}, {"twice the slots", 2, 4, 0.5}, {"more slots", 4, 4, 1.0}};
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    OneNode f(tc.slots, tc.jobs);
    RuntimeModel model(f.cluster, f.tasks);
    for (const Task& t : f.tasks) model.Place(t);
    EXPECT_TRUE(model.Advance(0, 1'000, 1.0).empty());
    EXPECT_DOUBLE_EQ(f.tasks[0].progress_s, tc.progress_s);
  }
}

TEST(RuntimeModel, NvlinkJobsWithoutLinksShareTheNodesPcie) {
  OneNode f(2, 4);
  f.cluster.nodes[0].links = {{0, 0}, {0, 0}};  // PCIe only
  RuntimeModel model(f.cluster, f.tasks);
  for (const Task& t : f.tasks) model.Place(t);
  model.Advance(0, 1'000, 1.0);
  // 1.5× slower over PCIe, and four jobs on a fabric that serves two.
  EXPECT_DOUBLE_EQ(f.tasks[0].progress_s, 1 / 1.5 * (2.0 / 4));
}

TEST(RuntimeModel, AnOvercommittedGpuKillsItsNewestTenant) {
  OneNode f(2, 4);  // 4 × 8 GiB on a 24 GiB GPU once ramped
  RuntimeModel model(f.cluster, f.tasks);
  for (const Task& t : f.tasks) model.Place(t);
  double usage = 0;
  EXPECT_EQ(model.OomVictim(0, 0, 1'000, &usage), 3);
  EXPECT_DOUBLE_EQ(usage, 32.0 / 24.0);
  model.Remove(f.tasks[3]);
  EXPECT_EQ(model.OomVictim(0, 0, 1'000, &usage), -1);
  EXPECT_DOUBLE_EQ(usage, 1.0);
  EXPECT_EQ(model.Held(0), (std::vector<int>{3, 3}));
}

}  // namespace
}  // namespace tidal::sim
