#include "sim/node_classes.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "sim/trace_policies.h"

namespace tidal::sim {
namespace {

// A pod of `gpus` GPUs of `milli` each, with 4 CPUs and 8 GiB.
PodDemand Pod(int gpus, int milli, std::int64_t cpu_milli = 4000) {
  return TracePod("p", "p", cpu_milli, 8192, gpus, milli);
}

GpuSet On(std::initializer_list<int> gpus) {
  GpuSet set;
  for (int g : gpus) set.Add(g);
  return set;
}

NodeState Row(const std::string& name, int gpus = 4, const std::string& model = "V100M16",
              std::int64_t cpu_milli = 32000) {
  return TraceNodeView(name, cpu_milli, 262144, gpus, model);
}

TEST(TraceNodeClasses, NodesAlikeButForTheNameShareAClass) {
  struct Case {
    const char* name;
    std::function<NodeState()> a, b;
    bool same;
  };
  auto placed = [](NodeState n, const PodDemand& pod, GpuSet gpus) {
    ApplyTracePod(&n, pod, gpus, +1);
    return n;
  };
  const Case cases[] = {
      {"nothing placed, other names", [] { return Row("a"); }, [] { return Row("b"); }, true},
      {"the same pod on the same GPU", [&] { return placed(Row("a"), Pod(1, 500), On({1})); },
       [&] { return placed(Row("b"), Pod(1, 500), On({1})); }, true},
      {"another CPU on the row", [] { return Row("a"); },
       [] { return Row("b", 4, "V100M16", 64000); }, false},
      {"another GPU model", [] { return Row("a"); }, [] { return Row("b", 4, "T4"); }, false},
      {"another GPU count", [] { return Row("a"); }, [] { return Row("b", 8); }, false},
      {"the same pod on another GPU", [&] { return placed(Row("a"), Pod(1, 500), On({1})); },
       [&] { return placed(Row("b"), Pod(1, 500), On({2})); }, false},
      {"the same shares, other CPU requested",
       [&] { return placed(Row("a"), Pod(1, 500, 4000), On({1})); },
       [&] { return placed(Row("b"), Pod(1, 500, 8000), On({1})); }, false},
      {"two halves or one whole GPU",
       [&] {
         return placed(placed(Row("a"), Pod(1, 500, 2000), On({0})), Pod(1, 500, 2000), On({0}));
       },
       [&] { return placed(Row("b"), Pod(1, 1000), On({0})); }, false},
      {"other kinds of GPU pods",
       [] {
         NodeState n = Row("a");
         n.gpu_pod_kinds = 1;
         return n;
       },
       [] { return Row("b"); }, false},
      {"more GPUs than the key holds", [] { return Row("a", 9); }, [] { return Row("b", 9); },
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<NodeState> nodes = {c.a(), c.b()};
    const TraceNodeClasses classes(nodes);
    EXPECT_EQ(classes.Of(0) == classes.Of(1), c.same);
    EXPECT_LT(classes.Of(0), classes.Count());
    EXPECT_LT(classes.Of(1), classes.Count());
  }
}

// A node's class follows it: it leaves its twin's class when a pod is placed on
// it, and joins it again when the twin gets the same pod.
TEST(TraceNodeClasses, UpdateFollowsTheNode) {
  std::vector<NodeState> nodes = {Row("a"), Row("b"), Row("c", 8)};
  TraceNodeClasses classes(nodes);
  ASSERT_EQ(classes.Of(0), classes.Of(1));
  ASSERT_NE(classes.Of(0), classes.Of(2));
  ApplyTracePod(&nodes[0], Pod(2, 1000), On({0, 1}), +1);
  classes.Update(0, nodes[0]);
  EXPECT_NE(classes.Of(0), classes.Of(1));
  ApplyTracePod(&nodes[1], Pod(2, 1000), On({0, 1}), +1);
  classes.Update(1, nodes[1]);
  EXPECT_EQ(classes.Of(0), classes.Of(1));
  EXPECT_NE(classes.Of(0), classes.Of(2));
  ApplyTracePod(&nodes[0], Pod(2, 1000), On({0, 1}), -1);
  classes.Update(0, nodes[0]);
  EXPECT_NE(classes.Of(0), classes.Of(1));
  EXPECT_NE(classes.Of(0), classes.Of(2));
}

// The ids stay as few as the nodes (and one more, while a node moves): a class
// left empty gives its id to the next new one.
TEST(TraceNodeClasses, IdsDoNotGrowWithTheUpdates) {
  std::vector<NodeState> nodes = {Row("a"), Row("b"), Row("c")};
  TraceNodeClasses classes(nodes);
  for (int k = 1; k <= 100; ++k) {
    ApplyTracePod(&nodes[0], Pod(1, 1, k), On({0}), +1);
    classes.Update(0, nodes[0]);
    EXPECT_LE(classes.Count(), nodes.size() + 1);
    EXPECT_LT(classes.Of(0), classes.Count());
    EXPECT_NE(classes.Of(0), classes.Of(1));
  }
  EXPECT_EQ(classes.Of(1), classes.Of(2));
}

}  // namespace
}  // namespace tidal::sim
