#include "policy/plugins/gpufit/gpufit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "testing/builders.h"
#include "tidal/gpu/topology.h"

namespace tidal {
namespace {

using namespace tidal::testing;

// The brief's case: a node with one GPU nearly full and one with 36 GB free.
NodeState OomCaseNode() {
  return NodeBuilder("n").Gpus(2, 48 * kGi).Used(0, 46 * kGi).Used(1, 12 * kGi).Build();
}

// DGX-1 style hybrid cube mesh (V100): 0-1-2-3 and 4-5-6-7 fully linked inside,
// with single or double links, and i <-> i+4 across.
NodeState CubeMesh() {
  NodeBuilder b("dgx1");
  b.Gpus(8, 16 * kGi, "V100");
  b.Link(0, 1, 1).Link(0, 2, 1).Link(0, 3, 2).Link(1, 2, 2).Link(1, 3, 1).Link(2, 3, 1);
  b.Link(4, 5, 1).Link(4, 6, 1).Link(4, 7, 2).Link(5, 6, 2).Link(5, 7, 1).Link(6, 7, 1);
  b.Link(0, 4, 2).Link(1, 5, 2).Link(2, 6, 2).Link(3, 7, 2);
  return b.Build();
}

struct Case {
  const char* name;
  NodeState node;
  PodDemand pod;
  bool want_fit;
  Code want_code;
  std::vector<int> want_gpus;
  const char* want_reason;
};

TEST(GpuFit, PlacesInRealFreeMemoryAndOnNvlink) {
  const Case cases[] = {
      {"one GPU goes where it really fits, not on the full GPU",
       OomCaseNode(),
       PodBuilder().Gpus(1).Memory(20 * kGi).Build(),
       true,
       Code::kFits,
       {1},
       ""},
      {"tightest fit among several that fit",
       NodeBuilder("n")
           .Gpus(3, 24 * kGi)
           .Used(0, 2 * kGi)
           .Used(1, 10 * kGi)
           .Used(2, 4 * kGi)
           .Build(),
       PodBuilder().Gpus(1).Memory(12 * kGi).Build(),
       true,
       Code::kFits,
       {1},
       ""},
      {"equal free memory: lowest index",
       NodeBuilder("n").Gpus(4, 24 * kGi).Build(),
       PodBuilder().Gpus(1).Memory(4 * kGi).Build(),
       true,
       Code::kFits,
       {0},
       ""},
      {"no GPU has the memory: unfit with numbers",
       OomCaseNode(),
       PodBuilder().Gpus(1).Memory(40 * kGi).Build(),
       false,
       Code::kUnfit,
       {},
       "0 of 2 GPUs have 40Gi free (largest free 36Gi), pod needs 1"},
      {"more GPUs than the node has: unresolvable",
       NodeBuilder("n").Gpus(4, 24 * kGi).Build(),
       PodBuilder().Gpus(8).Memory(1 * kGi).Build(),
       false,
       Code::kUnresolvable,
       {},
       "pod needs 8 GPUs, node has 4"},
      {"a pod with no GPUs always fits",
       NodeBuilder("n").Build(),
       PodBuilder().Build(),
       true,
       Code::kFits,
       {},
       ""},
      {"required NVLink on a PCIe-only node: unresolvable",
       NodeBuilder("n").Gpus(4, 24 * kGi).Build(),
       PodBuilder().Gpus(2).Memory(8 * kGi).NvlinkRequired().Build(),
       false,
       Code::kUnresolvable,
       {},
       "pod requires NVLink across 2 GPUs, node has none"},
      {"detected NVLink on a PCIe-only node still fits",
       NodeBuilder("n").Gpus(4, 24 * kGi).Build(),
       PodBuilder().Gpus(2).Memory(8 * kGi).Image("pytorch/pytorch:2.1").Build(),
       true,
       Code::kFits,
       {0, 1},
       ""},
      {"required NVLink picks the linked pair",
       NodeBuilder("n").Gpus(4, 24 * kGi).Link(1, 3, 4).Build(),
       PodBuilder().Gpus(2).Memory(8 * kGi).NvlinkRequired().Build(),
       true,
       Code::kFits,
       {1, 3},
       ""},
      {"required NVLink: the linked pair lacks memory",
       NodeBuilder("n").Gpus(4, 24 * kGi).Link(1, 3, 4).Used(3, 20 * kGi).Build(),
       PodBuilder().Gpus(2).Memory(8 * kGi).NvlinkRequired().Build(),
       false,
       Code::kUnfit,
       {},
       "no 2 NVLink-connected GPUs with 8Gi free each"},
      {"cube mesh: the pair with two links wins",
       CubeMesh(),
       PodBuilder().Gpus(2).Memory(8 * kGi).NvlinkRequired().Build(),
       true,
       Code::kFits,
       {1, 2},
       ""},
      {"cube mesh: four GPUs inside one quad",
       CubeMesh(),
       PodBuilder().Gpus(4).Memory(8 * kGi).NvlinkRequired().Build(),
       true,
       Code::kFits,
       {0, 1, 2, 3},
       ""},
      {"cube mesh: no 5-clique exists",
       CubeMesh(),
       PodBuilder().Gpus(5).Memory(8 * kGi).NvlinkRequired().Build(),
       false,
       Code::kUnfit,
       {},
       "no 5 NVLink-connected GPUs"},
      {"NVSwitch: all pairs equal, tightest memory decides",
       NodeBuilder("n")
           .Gpus(4, 80 * kGi, "A100")
           .FullyLinked(12)
           .Used(2, 30 * kGi)
           .Used(3, 30 * kGi)
           .Build(),
       PodBuilder().Gpus(2).Memory(40 * kGi).NvlinkRequired().Build(),
       true,
       Code::kFits,
       {2, 3},
       ""},
  };
  GpuFit plugin{GpuFitArgs{}};
  const PolicyConfig config = DefaultPolicyConfig();
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CycleState cycle = Cycle(config, tc.pod);
    NodeScratch scratch;
    const Status s = plugin.FilterOne(cycle, tc.node, scratch);
    EXPECT_EQ(s.code(), tc.want_code) << s.reason();
    EXPECT_EQ(s.ok(), tc.want_fit);
    if (s.ok()) {
      EXPECT_EQ(scratch.gpus.Indices(), tc.want_gpus);
    } else {
      EXPECT_NE(s.reason().find(tc.want_reason), std::string::npos) << s.reason();
    }
  }
}

TEST(GpuFit, ScorePrefersBetterLinkedSets) {
  const PolicyConfig config = DefaultPolicyConfig();
  const PodDemand pod = PodBuilder().Gpus(2).Memory(8 * kGi).NvlinkRequired().Build();
  const CycleState cycle = Cycle(config, pod);
  GpuFit plugin{GpuFitArgs{}};
  const NodeState mesh = CubeMesh();
  // Fill the double-link pairs so only single-link pairs remain in quad 0..3.
  NodeState partial =
      NodeBuilder("p").Gpus(4, 16 * kGi).Link(0, 1, 1).Link(2, 3, 2).Used(2, 16 * kGi).Build();
  NodeScratch a, b;
  ASSERT_TRUE(plugin.FilterOne(cycle, mesh, a).ok());
  ASSERT_TRUE(plugin.FilterOne(cycle, partial, b).ok());
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, mesh, a), 100);
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, partial, b), 50);
}

// ScoreBatch skips the nodes when every one scores alike (UniformScore): the
// scores of the nodes that pass the filter must be ScoreOne's all the same.
TEST(GpuFit, BatchScoresEqualScoreOne) {
  struct ScoreCase {
    const char* name;
    PodDemand pod;
    bool want_uniform;
  };
  const ScoreCase cases[] = {
      {"1 GPU", PodBuilder().Gpus(1).Memory(8 * kGi).Build(), true},
      {"1 GPU, NVLink asked", PodBuilder().Gpus(1).Memory(8 * kGi).NvlinkRequired().Build(), true},
      {"2 GPUs without NVLink", PodBuilder().Gpus(2).Memory(8 * kGi).Build(), true},
      {"2 GPUs on NVLink", PodBuilder().Gpus(2).Memory(8 * kGi).NvlinkRequired().Build(), false},
      {"4 GPUs on NVLink", PodBuilder().Gpus(4).Memory(4 * kGi).NvlinkRequired().Build(), false},
  };
  const PolicyConfig config = DefaultPolicyConfig();
  GpuFit plugin{GpuFitArgs{}};
  const std::vector<NodeState> cluster = {
      CubeMesh(), OomCaseNode(),
      NodeBuilder("p").Gpus(4, 16 * kGi).Link(0, 1, 1).Link(2, 3, 2).Used(2, 16 * kGi).Build()};
  std::vector<const NodeState*> nodes;
  for (const NodeState& n : cluster) nodes.push_back(&n);
  for (const ScoreCase& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CycleState cycle = Cycle(config, tc.pod);
    EXPECT_EQ(plugin.UniformScore(cycle).has_value(), tc.want_uniform);
    std::vector<NodeScratch> scratch(nodes.size());
    std::vector<Status> verdicts(nodes.size());
    plugin.FilterBatch(cycle, nodes, scratch, std::span<Status>(verdicts), false);
    std::vector<double> scores(nodes.size(), -1);
    plugin.ScoreBatch(cycle, nodes, scratch, std::span<const Status>(verdicts), scores);
    int scored = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!verdicts[i].ok()) continue;
      ++scored;
      EXPECT_DOUBLE_EQ(scores[i], plugin.ScoreOne(cycle, *nodes[i], scratch[i])) << nodes[i]->name;
    }
    EXPECT_GT(scored, 0);
  }
}

TEST(GpuFit, GreedySearchOnLargeNodesStillFindsCliques) {
  // 32 GPUs in 4 fully linked islands of 8; ask for 4 linked GPUs.
  NodeBuilder b("big");
  b.Gpus(32, 80 * kGi, "H100");
  for (int island = 0; island < 4; ++island)
    for (int i = 0; i < 8; ++i)
      for (int j = i + 1; j < 8; ++j) b.Link(island * 8 + i, island * 8 + j, 18);
  const NodeState node = b.Build();
  GpuChoice choice;
  ASSERT_TRUE(ChooseGpus(node, 4, 10 * kGi, true, true, 16, &choice));
  EXPECT_EQ(choice.gpus.Count(), 4);
  for (int g : choice.gpus.Indices()) EXPECT_EQ(g / 8, choice.gpus.Indices()[0] / 8);
  EXPECT_EQ(choice.links, 6 * 18);
}

TEST(GpuFitArgs, Validation) {
  ConfigErrors errors;
  EXPECT_EQ(NewGpuFit(YAML::Load("{exhaustiveSearchLimit: 40}"), "plugins.gpufit.args", errors),
            nullptr);
  EXPECT_EQ(
      errors.items(),
      std::vector<std::string>{"plugins.gpufit.args.exhaustiveSearchLimit: 40 is outside [1, 24]"});
  ConfigErrors ok;
  EXPECT_NE(NewGpuFit(YAML::Node(), "plugins.gpufit.args", ok), nullptr);
  EXPECT_TRUE(ok.empty());
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

using namespace tidal::testing;

// Builds a node from a real `nvidia-smi topo -m` capture.
NodeState FromTopology(const std::string& file, Bytes memory) {
  std::ifstream in(std::string(TIDAL_TESTDATA_DIR) + "/reference/nvidia-smi/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  GpuTopology topo;
  const Status s = ParseTopoMatrix(ss.str(), &topo);
  EXPECT_TRUE(s.ok()) << file << ": " << s.reason();
  NodeBuilder b(file);
  b.Gpus(static_cast<int>(topo.gpus.size()), memory);
  NodeState n = b.Build();
  for (std::size_t g = 0; g < n.gpus.size(); ++g)
    n.gpus[g].nvlink_peers = topo.PeersOf(static_cast<int>(g));
  n.Finalize();
  return n;
}

bool PairwiseLinked(const NodeState& n, GpuSet set) {
  const auto idx = set.Indices();
  for (std::size_t a = 0; a < idx.size(); ++a)
    for (std::size_t b = a + 1; b < idx.size(); ++b)
      if (n.gpus[idx[a]].LinksTo(idx[b]) == 0) return false;
  return true;
}

TEST(GpuFit, CliqueChoiceOnRealTopologies) {
  struct TopoCase {
    const char* name;
    const char* file;
    int gpus;
    bool want_fit;
    int want_links;  // links inside the chosen set
  };
  const TopoCase cases[] = {
      {"DGX-1 V100 cube mesh: best pair has 2 links",
       "topo-m_v100-sxm2x8_dgx1-hybrid-cube-mesh_1nic.txt", 2, true, 2},
      {"DGX-1 V100 cube mesh: a linked quad", "topo-m_v100-sxm2x8_dgx1-hybrid-cube-mesh_1nic.txt",
       4, true, 9},
      {"DGX-1 V100 cube mesh: no linked 5-set", "topo-m_v100-sxm2x8_dgx1-hybrid-cube-mesh_1nic.txt",
       5, false, 0},
      {"A100 NVSwitch: any 8 are linked, NV12 each pair", "topo-m_a100-sxm4-80gbx8_nv12_8nic.txt",
       8, true, 28 * 12},
      {"H100 NV18: 4 GPUs", "topo-m_h100x8_nv18_no-nic.txt", 4, true, 6 * 18},
      {"PCIe only: required NVLink never fits", "topo-m_pcie4gpu_pix-pairs_sys_gpu008.txt", 2,
       false, 0},
  };
  const PolicyConfig config = DefaultPolicyConfig();
  GpuFit plugin{GpuFitArgs{}};
  for (const TopoCase& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node = FromTopology(tc.file, 32 * kGi);
    const PodDemand pod = PodBuilder().Gpus(tc.gpus).Memory(8 * kGi).NvlinkRequired().Build();
    const CycleState cycle = Cycle(config, pod);
    NodeScratch scratch;
    const Status s = plugin.FilterOne(cycle, node, scratch);
    ASSERT_EQ(s.ok(), tc.want_fit) << s.reason();
    if (!s.ok()) continue;
    EXPECT_EQ(scratch.gpus.Count(), tc.gpus);
    EXPECT_TRUE(PairwiseLinked(node, scratch.gpus));
    EXPECT_EQ(scratch.nvlink_links, tc.want_links);
  }
}

// ChooseGpus bounds its clique search; it must choose exactly what visiting every
// set chooses, ties on links and slack included (a sweep of seeded random nodes).
TEST(GpuFit, BoundedCliqueSearchChoosesAsExhaustive) {
  struct Shape {
    const char* name;
    int gpus;
    int free_levels;        // distinct used-memory levels: few levels, many slack ties
    bool nvswitch;          // every pair 12 links, both ways
    bool odd_entries;       // one-sided, zero, negative, repeated and out-of-range peers
    bool no_links = false;  // PCIe only: no peer entry at all
    bool reversed = false;  // GPUs listed by decreasing index
  };
  const Shape shapes[] = {
      {"NVSwitch, free memory all different", 8, 0, true, false},
      {"NVSwitch, free memory on two levels", 8, 2, true, false},
      {"NVSwitch, all GPUs idle", 8, 1, true, false},
      {"NVSwitch listed by decreasing index, two levels", 8, 2, true, false, false, true},
      {"NVSwitch, 4 GPUs on three levels", 4, 3, true, false},
      {"PCIe only, two levels", 8, 2, false, false, true},
      {"PCIe only listed by decreasing index", 8, 3, false, false, true, true},
      {"mixed links, symmetric", 8, 3, false, false},
      {"mixed links with odd peer entries", 8, 3, false, true},
      {"12 GPUs, mixed links with odd peer entries", 12, 4, false, true},
  };
  std::mt19937_64 rng(20261203);
  auto below = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int compared = 0, fitted = 0;
  for (const Shape& sh : shapes) {
    SCOPED_TRACE(sh.name);
    for (int trial = 0; trial < 150; ++trial) {
      NodeBuilder b("n");
      b.Gpus(sh.gpus, 80 * kGi);
      for (int g = 0; g < sh.gpus; ++g)
        b.Used(g, sh.free_levels == 0 ? static_cast<Bytes>(rng() % (70 * kGi))
                                      : below(sh.free_levels) * 16 * kGi);
      if (sh.nvswitch) b.FullyLinked(12);
      NodeState node = b.Build();
      if (sh.reversed) {
        std::reverse(node.gpus.begin(), node.gpus.end());
        node.Finalize();
      }
      if (!sh.nvswitch && !sh.no_links) {
        const int links[] = {1, 1, 2, 4};
        for (int x = 0; x < sh.gpus; ++x)
          for (int y = x + 1; y < sh.gpus; ++y)
            if (below(10) < 6) {
              node.gpus[x].nvlink_peers.push_back({y, links[below(4)]});
              node.gpus[y].nvlink_peers.push_back({x, links[below(4)]});
            }
        if (sh.odd_entries)
          for (int e = 0; e < 6; ++e) {
            const int odd_links[] = {-1, 0, 3, 7};
            const int peers[] = {below(sh.gpus), below(sh.gpus), -1, 70};
            node.gpus[below(sh.gpus)].nvlink_peers.push_back(
                {peers[below(4)], odd_links[below(4)]});
          }
        node.Finalize();
      }
      for (int k = 2; k <= std::min(5, sh.gpus); ++k)
        for (bool require : {false, true})
          for (bool prefer : {true, false}) {
            const Bytes need = Bytes{below(4)} * 10 * kGi;
            GpuChoice got, want;
            const bool got_fit = ChooseGpus(node, k, need, require, prefer, 24, &got);
            const bool want_fit = ChooseGpusExhaustive(node, k, need, require, prefer, &want);
            ++compared;
            fitted += want_fit ? 1 : 0;
            const auto where = ::testing::Message()
                               << "trial " << trial << " k " << k << " require " << require
                               << " prefer " << prefer;
            ASSERT_EQ(got_fit, want_fit) << where;
            EXPECT_EQ(got.gpus.bits(), want.gpus.bits()) << where;
            EXPECT_EQ(got.links, want.links) << where;
            EXPECT_EQ(got.slack, want.slack) << where;
          }
    }
  }
  // The sweep must reach both outcomes to mean anything.
  EXPECT_GT(fitted, compared / 4);
  EXPECT_LT(fitted, compared);
}

}  // namespace
}  // namespace tidal
