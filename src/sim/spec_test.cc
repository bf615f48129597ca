#include "tidal/sim/spec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tidal/core/status.h"

namespace tidal::sim {
namespace {

std::string ReadFile(const std::string& rel) {
  std::ifstream in(std::string(TIDAL_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Spec, BuiltinsAreTheShippedFiles) {
  EXPECT_EQ(BuiltinWorkloadYaml("seed"), ReadFile("examples/workloads/seed.yaml"));
  EXPECT_EQ(BuiltinClusterYaml("seed-8xA10"), ReadFile("examples/clusters/seed-8xA10.yaml"));
  EXPECT_EQ(BuiltinClusterYaml("seed-8xA10-golden"),
            ReadFile("examples/clusters/seed-8xA10-golden.yaml"));
  EXPECT_EQ(BuiltinWorkloadYaml("nope"), nullptr);
}

TEST(Spec, SeedClusterIsEightNodesOfFourA10s) {
  const ClusterSpec c = LoadCluster("builtin:seed-8xA10");
  ASSERT_EQ(c.nodes.size(), 8u);
  EXPECT_EQ(c.nodes[0].name, "node-01");
  EXPECT_EQ(c.nodes[7].name, "node-08");
  for (const auto& n : c.nodes) {
    EXPECT_EQ(n.gpu_count, 4);
    EXPECT_EQ(n.gpu_memory, Bytes{24} << 30);
    EXPECT_EQ(n.replicas_per_gpu, 2);
    for (const auto& row : n.links)
      for (int l : row) EXPECT_EQ(l, 0);  // PCIe only
  }
  const ClusterSpec g = LoadCluster("builtin:seed-8xA10-golden");
  ASSERT_EQ(g.nodes.size(), 10u);
  EXPECT_EQ(g.nodes[8].labels.at("tidal.io/pool"), "golden");
  EXPECT_EQ(g.nodes[8].links[0][3], 12);
  EXPECT_EQ(g.nodes[8].links[2][2], 0);
  EXPECT_EQ(g.nodes[8].nvlink_slots_per_gpu, 2);  // the default
}

TEST(Spec, NvlinkSlotsAreTheClustersNotThePolicys) {
  const ClusterSpec c = LoadClusterSpec(
      YAML::Load("nodes: [{name: a, topology: {nvlink: all, links: 4, slotsPerGpu: 3}}]"), "test");
  ASSERT_EQ(c.nodes.size(), 1u);
  EXPECT_EQ(c.nodes[0].nvlink_slots_per_gpu, 3);
}

TEST(Spec, SeedWorkloadIsAHundredMixedTasks) {
  const WorkloadSpec w = LoadWorkload("builtin:seed");
  int total = 0;
  for (const auto& c : w.classes) total += c.count;
  EXPECT_EQ(total, 100);
  ASSERT_EQ(w.classes.size(), 3u);
  EXPECT_EQ(w.classes[0].load_type, LoadType::kGpuHeavy);
  EXPECT_EQ(w.classes[1].gpus, 2);
  EXPECT_TRUE(w.classes[1].uses_nvlink);
  EXPECT_FALSE(w.classes[2].declared_memory.has_value());
  EXPECT_EQ(w.classes[0].duration_seconds.lo, 1200);
}

TEST(Spec, ErrorsNameTheirPath) {
  struct Case {
    const char* name;
    const char* yaml;
    bool cluster;
    const char* want;
  };
  const Case cases[] = {
      {"cluster without nodes", "{}", true, "expected a mapping with a list under \"nodes\""},
      {"both name and prefix", "nodes: [{name: a, namePrefix: b}]", true,
       "nodes[0]: give exactly one of name or namePrefix"},
      {"bad GPU memory", "nodes: [{name: a, gpu: {memory: lots}}]", true,
       "nodes[0].gpu.memory: expected a non-negative"},
      {"bad topology", "nodes: [{name: a, topology: {nvlink: some}}]", true,
       "nodes[0].topology.nvlink: \"some\""},
      {"bad pair", "nodes: [{name: a, topology: {nvlink: pairs, pairs: [[0, 9, 2]]}}]", true,
       "nodes[0].topology.pairs[0]: expected [gpu, gpu, links]"},
      {"no NVLink slots", "nodes: [{name: a, topology: {nvlink: all, slotsPerGpu: 0}}]", true,
       "nodes[0].topology.slotsPerGpu: must be >= 1"},
      {"workload without classes", "{}", false, "expected a mapping with a list under \"classes\""},
      {"class without memory", "classes: [{name: a, count: 1}]", false,
       "classes[0].memory: required"},
      {"peak below context", "classes: [{name: a, memory: {context: 2Gi, peak: [1Gi, 1Gi]}}]",
       false, "classes[0].memory.peak: must be at least the context"},
      {"bad range", "classes: [{name: a, memory: {peak: [2Gi, 1Gi]}}]", false,
       "classes[0].memory.peak: expected a value or [low, high]"},
      {"bad arrival", "classes: [{name: a, memory: {peak: 1Gi}, arrival: {kind: wave}}]", false,
       "classes[0].arrival.kind: \"wave\" (expected burst or poisson)"},
      {"bad load type", "classes: [{name: a, memory: {peak: 1Gi}, loadType: HEAVY}]", false,
       "classes[0].loadType: \"HEAVY\""},
      // Found by fuzz_sim_cluster: 2.2e67 cores (2.2e70 millicores) overflowed the millicore cast
      // (UB).
      {"node cpu beyond int64",
       "nodes: [{name: a, cpu: "
       "22222222222222222222222222222222222222222222222222222222222222222264}]",
       true, "nodes[0].cpu: 2.2222222222222223e+67 is outside [0, 1000000] cores"},
      {"negative node cpu", "nodes: [{name: a, cpu: -1}]", true, "nodes[0].cpu: -1 is outside"},
      // Found by fuzz_sim_cluster: count 2222264 allocated 2 GB of node specs.
      {"too many nodes", "nodes: [{namePrefix: n, count: 19999}, {namePrefix: m, count: 2}]", true,
       "nodes[1].count: 2 takes the cluster over 20000 nodes"},
      {"task cpu beyond int64", "classes: [{name: a, memory: {peak: 1Gi}, requests: {cpu: 1e300}}]",
       false, "classes[0].requests.cpu: 1e+300 is outside [0, 1000000] cores"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    try {
      if (tc.cluster)
        LoadClusterSpec(YAML::Load(tc.yaml), "test");
      else
        LoadWorkloadSpec(YAML::Load(tc.yaml), "test");
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_NE(e.message.find(tc.want), std::string::npos) << e.message;
    }
  }
}

TEST(Spec, UnknownBuiltinsAndFiles) {
  EXPECT_THROW(LoadWorkload("builtin:nope"), InputError);
  EXPECT_THROW(LoadCluster("builtin:nope"), InputError);
  EXPECT_THROW(LoadCluster("/nonexistent/cluster.yaml"), InputError);
}

}  // namespace
}  // namespace tidal::sim
