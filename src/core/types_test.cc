#include "tidal/core/types.h"

#include <gtest/gtest.h>

namespace tidal {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;

TEST(GpuSet, IndicesAreAscending) {
  GpuSet s;
  s.Add(5);
  s.Add(0);
  s.Add(63);
  EXPECT_EQ(s.Count(), 3);
  EXPECT_EQ(s.Indices(), (std::vector<int>{0, 5, 63}));
  EXPECT_TRUE(s.Has(63));
  EXPECT_FALSE(s.Has(1));
}

TEST(NodeState, FinalizeComputesTheLoadVector) {
  struct Case {
    const char* name;
    std::vector<std::pair<Bytes, Bytes>> gpus;  // used, total
    double competition;
    std::vector<double> nvlink_util;
    double want_mem;
    double want_nvl;
  };
  const Case cases[] = {
      {"no GPUs is zero load", {}, 0, {}, 0, 0},
      {"sum of used over sum of total", {{12 * kGi, 24 * kGi}, {6 * kGi, 24 * kGi}}, 0, {0, 0}, 0.375, 0},
      {"competition wins over measured", {{0, 24 * kGi}, {0, 24 * kGi}}, 0.25, {0.1, 0.1}, 0, 0.25},
      {"measured mean wins over competition", {{0, 24 * kGi}, {0, 24 * kGi}}, 0.1, {0.2, 0.6}, 0, 0.4},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    NodeState n;
    n.nvlink_competition = tc.competition;
    for (std::size_t i = 0; i < tc.gpus.size(); ++i) {
      Gpu g;
      g.index = static_cast<int>(i);
      g.memory_used = tc.gpus[i].first;
      g.memory_total = tc.gpus[i].second;
      g.nvlink_utilization = tc.nvlink_util[i];
      n.gpus.push_back(g);
    }
    n.Finalize();
    EXPECT_DOUBLE_EQ(n.load.gpu_memory, tc.want_mem);
    EXPECT_DOUBLE_EQ(n.load.nvlink, tc.want_nvl);
  }
}

TEST(NodeState, FinalizeBuildsAdjacencyAndFreeMemory) {
  NodeState n;
  Gpu a{0, "", "A100", 80 * kGi, 20 * kGi, 0, -1, {{1, 12}}};
  Gpu b{1, "", "A100", 80 * kGi, 90 * kGi, 0, -1, {{0, 12}}};  // used over total: free is 0
  n.gpus = {a, b};
  n.Finalize();
  EXPECT_EQ(n.gpu_free, (std::vector<Bytes>{60 * kGi, 0}));
  EXPECT_EQ(n.max_gpu_free, 60 * kGi);
  EXPECT_EQ(n.nvlink_adjacency[0], 0b10u);
  EXPECT_EQ(n.nvlink_adjacency[1], 0b01u);
}

TEST(LoadType, ParsesTheDocumentedNames) {
  EXPECT_EQ(ParseLoadType("GPU_HEAVY"), LoadType::kGpuHeavy);
  EXPECT_EQ(ParseLoadType("IO_HEAVY"), LoadType::kIoHeavy);
  EXPECT_EQ(ParseLoadType(""), LoadType::kUnspecified);
  EXPECT_EQ(ParseLoadType("gpu_heavy"), std::nullopt);
}

TEST(NodeState, FinalizeSummarisesPeerEntries) {
  struct Case {
    const char* name;
    std::vector<std::vector<NvlinkPeer>> peers;  // per GPU
    int want_max_links;
    bool want_has_peers;
  };
  const Case cases[] = {
      {"no peers", {{}, {}}, 0, false},
      {"entries with zero links still count as peers", {{{1, 0}}, {}}, 0, true},
      {"negative links never go below zero", {{{1, -3}}, {{0, -1}}}, 0, true},
      {"largest entry of any GPU", {{{1, 2}}, {{0, 18}}}, 18, true},
      {"a peer index out of range still counts", {{{70, 6}}, {}}, 6, true},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    NodeState n;
    for (std::size_t i = 0; i < tc.peers.size(); ++i) {
      Gpu g;
      g.index = static_cast<int>(i);
      g.memory_total = 80 * kGi;
      g.nvlink_peers = tc.peers[i];
      n.gpus.push_back(g);
    }
    n.max_nvlink_links = 99;  // stale values from before are replaced
    n.has_nvlink_peers = !tc.want_has_peers;
    n.Finalize();
    EXPECT_EQ(n.max_nvlink_links, tc.want_max_links);
    EXPECT_EQ(n.has_nvlink_peers, tc.want_has_peers);
  }
}

}  // namespace
}  // namespace tidal
