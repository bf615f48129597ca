#include "tidal/policy/snapshot_file.h"

#include <gtest/gtest.h>

#include "tidal/core/status.h"

namespace tidal {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;

TEST(NodeSnapshot, ReadsTheDocumentedShape) {
  const auto nodes = LoadNodeSnapshot(YAML::Load(R"(
nodes:
  - name: node-01
    labels: {tidal.io/pool: golden}
    allocatableGPUs: 4
    storageAwaitMs: 42.83
    nvlinkCompetition: 0.25
    gpus:
      - {index: 0, model: A10, memoryTotal: 24Gi, memoryUsed: 12544Mi, nvlinkPeers: {1: 12, 2: 12}}
      - {index: 1, model: A10, memoryTotal: 24Gi, memoryUsed: 0}
)"));
  ASSERT_EQ(nodes.size(), 1u);
  const NodeState& n = nodes[0];
  EXPECT_EQ(n.name, "node-01");
  EXPECT_EQ(n.labels.at("tidal.io/pool"), "golden");
  EXPECT_EQ(n.allocatable_gpus, 4);
  EXPECT_DOUBLE_EQ(n.storage_await_ms, 42.83);
  ASSERT_EQ(n.gpus.size(), 2u);
  EXPECT_EQ(n.gpus[0].memory_used, 12544LL << 20);
  EXPECT_EQ(n.gpus[0].LinksTo(2), 12);
  EXPECT_DOUBLE_EQ(n.load.nvlink, 0.25);
  EXPECT_NEAR(n.load.gpu_memory, 12544.0 / (2 * 24 * 1024), 1e-12);
}

TEST(NodeSnapshot, JsonIsAcceptedToo) {
  const auto nodes = LoadNodeSnapshot(YAML::Load(
      R"({"nodes": [{"name": "a", "nvlinkPods": 2, "gpus": [{"memoryTotal": "24Gi"}, {"memoryTotal": "24Gi"},
         {"memoryTotal": "24Gi"}, {"memoryTotal": "24Gi"}]}]})"));
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_DOUBLE_EQ(nodes[0].nvlink_competition, 0.25);  // 2 / (4 × 2)
  EXPECT_EQ(nodes[0].gpus[3].index, 3);
  EXPECT_EQ(nodes[0].gpus[3].memory_total, 24 * kGi);
}

TEST(NodeSnapshot, ErrorsNameTheirPath) {
  struct Case {
    const char* name;
    const char* yaml;
    const char* want;
  };
  const Case cases[] = {
      {"no nodes list", "{}", "expected a mapping with a list under \"nodes\""},
      {"missing name", "nodes: [{gpus: []}]", "nodes[0].name: required"},
      {"bad quantity", "nodes: [{name: a, gpus: [{memoryTotal: 24GB}]}]",
       "nodes[0].gpus[0].memoryTotal: expected a non-negative byte quantity"},
      {"used over total", "nodes: [{name: a, gpus: [{memoryTotal: 1Gi, memoryUsed: 2Gi}]}]",
       "nodes[0].gpus[0].memoryUsed: is larger than memoryTotal"},
      {"duplicate node", "nodes: [{name: a}, {name: a}]", "nodes[1].name: duplicate node a"},
      {"duplicate GPU index",
       "nodes: [{name: a, gpus: [{index: 0, memoryTotal: 1Gi}, {index: 0, memoryTotal: 1Gi}]}]",
       "nodes[0].gpus[1].index: duplicate GPU index 0"},
      {"bad peers", "nodes: [{name: a, gpus: [{memoryTotal: 1Gi, nvlinkPeers: {x: 1}}]}]",
       "nodes[0].gpus[0].nvlinkPeers.x: expected GPU index: link count"},
      {"negative await", "nodes: [{name: a, storageAwaitMs: -1}]",
       "nodes[0].storageAwaitMs: must be >= 0"},
      {"typo", "nodes: [{name: a, gpuz: []}]", "nodes[0].gpuz: unknown field"},
      {"label value not a scalar", "nodes: [{name: a, labels: {pool: [golden]}}]",
       "nodes[0].labels.pool: expected a label value"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    try {
      LoadNodeSnapshot(YAML::Load(tc.yaml));
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_NE(e.message.find(tc.want), std::string::npos) << e.message;
    }
  }
}

}  // namespace
}  // namespace tidal
