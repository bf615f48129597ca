#include "tidal/core/types.h"

#include <gtest/gtest.h>

namespace tidal {
namespace {

// Two GPUs linked to each other by `links`.
std::vector<Gpu> TwoGpusLinkedBy(int links) {
  std::vector<Gpu> gpus(2);
  for (int i = 0; i < 2; ++i) {
    gpus[i].index = i;
    gpus[i].memory_total = Bytes{80} << 30;
    gpus[i].nvlink_peers = {{1 - i, links}};
  }
  return gpus;
}

NodeState Finalized(std::vector<Gpu> gpus) {
  NodeState n;
  n.gpus = std::move(gpus);
  n.Finalize();
  return n;
}

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
      {"sum of used over sum of total",
       {{12 * kGi, 24 * kGi}, {6 * kGi, 24 * kGi}},
       0,
       {0, 0},
       0.375,
       0},
      {"competition wins over measured", {{0, 24 * kGi}, {0, 24 * kGi}}, 0.25, {0.1, 0.1}, 0, 0.25},
      {"measured mean wins over competition",
       {{0, 24 * kGi}, {0, 24 * kGi}},
       0.1,
       {0.2, 0.6},
       0,
       0.4},
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
  EXPECT_EQ(std::vector<Bytes>(n.gpu_free().begin(), n.gpu_free().end()),
            (std::vector<Bytes>{60 * kGi, 0}));
  EXPECT_EQ(n.max_gpu_free(), 60 * kGi);
  EXPECT_EQ(n.nvlink_adjacency(0), 0b10u);
  EXPECT_EQ(n.nvlink_adjacency(1), 0b01u);
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
    NodeState n = Finalized(TwoGpusLinkedBy(99));  // what it derived before is replaced
    n.gpus.clear();
    for (std::size_t i = 0; i < tc.peers.size(); ++i) {
      Gpu g;
      g.index = static_cast<int>(i);
      g.memory_total = 80 * kGi;
      g.nvlink_peers = tc.peers[i];
      n.gpus.push_back(g);
    }
    n.Finalize();
    EXPECT_EQ(n.max_nvlink_links(), tc.want_max_links);
    EXPECT_EQ(n.has_nvlink_peers(), tc.want_has_peers);
  }
}

TEST(NodeState, FinalizeOrdersInlineGpusAndDetectsUniformLinks) {
  struct Case {
    const char* name;
    std::vector<int> indices;                    // per position
    std::vector<Bytes> used;                     // per position, of 80 GiB
    std::vector<std::vector<NvlinkPeer>> peers;  // per position
    int want_inline;                             // inline_gpus
    std::vector<int> want_order;                 // positions by free memory
    int want_uniform;
  };
  const std::vector<NvlinkPeer> none;
  const Case cases[] = {
      {"PCIe only: no links anywhere",
       {0, 1, 2},
       {10, 30, 20},
       {none, none, none},
       3,
       {1, 2, 0},
       0},
      {"fully linked alike",
       {0, 1, 2},
       {0, 0, 0},
       {{{1, 12}, {2, 12}}, {{0, 12}, {2, 12}}, {{0, 12}, {1, 12}}},
       3,
       {0, 1, 2},
       12},
      {"one pair differs",
       {0, 1, 2},
       {0, 0, 0},
       {{{1, 12}, {2, 12}}, {{0, 12}, {2, 6}}, {{0, 12}, {1, 12}}},
       3,
       {0, 1, 2},
       -1},
      {"a missing pair is not uniform",
       {0, 1, 2},
       {0, 0, 0},
       {{{1, 12}}, {{0, 12}, {2, 12}}, {{1, 12}}},
       3,
       {0, 1, 2},
       -1},
      {"the first entry for a peer is the one read",
       {0, 1},
       {0, 0},
       {{{1, 4}, {1, 9}}, {{0, 4}}},
       2,
       {0, 1},
       4},
      {"ties on free memory by index, not position",
       {3, 1, 2},
       {5, 5, 5},
       {none, none, none},
       3,
       {1, 2, 0},
       0},
      {"a repeated index has no inline order", {0, 0}, {0, 0}, {none, none}, 0, {}, -1},
      {"an index out of range has no inline order", {0, 64}, {0, 0}, {none, none}, 0, {}, -1},
      {"more GPUs than kept inline",
       {0, 1, 2, 3, 4, 5, 6, 7, 8},
       std::vector<Bytes>(9, 0),
       std::vector<std::vector<NvlinkPeer>>(9),
       0,
       {},
       -1},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    NodeState n = Finalized(TwoGpusLinkedBy(77));  // what it derived before is replaced
    n.gpus.clear();
    for (std::size_t p = 0; p < tc.indices.size(); ++p) {
      Gpu g;
      g.index = tc.indices[p];
      g.memory_total = 80 * kGi;
      g.memory_used = tc.used[p] * kGi;
      g.nvlink_peers = tc.peers[p];
      n.gpus.push_back(g);
    }
    n.Finalize();
    ASSERT_EQ(n.inline_gpus(), tc.want_inline);
    EXPECT_EQ(n.uniform_nvlink_links(), tc.want_uniform);
    std::vector<int> order;
    for (int s = 0; s < n.inline_gpus(); ++s) {
      order.push_back(n.position_by_rank(s));
      EXPECT_EQ(n.gpu_index_at(s), tc.indices[static_cast<std::size_t>(s)]);
      // Rank s is the GPU at position positions_by_free[s].
      const std::size_t p = n.position_by_rank(s);
      EXPECT_EQ(n.free_by_rank(s), n.gpu_free()[p]);
      EXPECT_EQ(n.index_by_rank(s), tc.indices[p]);
      if (s > 0) {
        EXPECT_LE(n.free_by_rank(s - 1), n.free_by_rank(s));
      }
    }
    EXPECT_EQ(order, tc.want_order);
  }
}

// MilliFree answers what the GPUs say, from the inline copy Finalize() keeps
// or from the GPUs themselves; a share changed after Finalize() is seen once the
// node is finalized again (as every writer does).
TEST(NodeState, MilliFreeIsTheGpusShares) {
  struct Case {
    const char* name;
    std::vector<int> indices;  // per position
    std::vector<int> milli;    // per position
    bool finalize;
    bool want_inline;
  };
  const Case cases[] = {
      {"inline, in position order", {2, 0, 1}, {1000, 250, 0}, true, true},
      {"never finalized: the GPUs", {0, 1}, {400, 600}, false, false},
      {"more GPUs than kept inline",
       {0, 1, 2, 3, 4, 5, 6, 7, 8},
       {1, 2, 3, 4, 5, 6, 7, 8, 9},
       true,
       false},
      {"a share too large to copy", {0, 1}, {1000, 40000}, true, false},
      {"a negative share", {0, 1}, {-5, 1000}, true, true},
      {"no GPUs", {}, {}, true, false},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    NodeState n;
    for (std::size_t p = 0; p < tc.indices.size(); ++p) {
      Gpu g;
      g.index = tc.indices[p];
      g.milli_free = tc.milli[p];
      n.gpus.push_back(g);
    }
    if (tc.finalize) n.Finalize();
    EXPECT_EQ(n.inline_gpus() > 0, tc.want_inline);
    int free[kMaxGpusPerNode];
    ASSERT_EQ(n.MilliFree(free), tc.milli.size());
    EXPECT_EQ(std::vector<int>(free, free + tc.milli.size()), tc.milli);
    if (tc.milli.empty()) continue;
    n.gpus[0].milli_free = 7;
    n.Finalize();
    ASSERT_EQ(n.MilliFree(free), tc.milli.size());
    EXPECT_EQ(free[0], 7);
  }
}

}  // namespace
}  // namespace tidal
