#include "tidal/gpu/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef TIDAL_TESTDATA_DIR
#define TIDAL_TESTDATA_DIR "testdata"
#endif

namespace tidal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr TopoCell kSelf{LinkKind::kSelf, 0};
constexpr TopoCell kPix{LinkKind::kPix, 0};
constexpr TopoCell kPxb{LinkKind::kPxb, 0};
constexpr TopoCell kPhb{LinkKind::kPhb, 0};
constexpr TopoCell kNode{LinkKind::kNode, 0};
constexpr TopoCell kSys{LinkKind::kSys, 0};
constexpr TopoCell Nv(int links) { return {LinkKind::kNvlink, links}; }

const std::string kSampleDir = std::string(TIDAL_TESTDATA_DIR) + "/reference/nvidia-smi";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The GPU→GPU or GPU→NIC cell, addressed by column name as printed in the header.
TopoCell CellAt(const GpuTopology& topo, int gpu, const std::string& column) {
  const auto g = static_cast<std::size_t>(gpu);
  for (std::size_t j = 0; j < topo.gpus.size(); ++j)
    if (topo.gpus[j] == column) return topo.gpu_links.at(g).at(j);
  for (std::size_t j = 0; j < topo.nics.size(); ++j)
    if (topo.nics[j] == column) return topo.gpu_nic.at(g).at(j);
  ADD_FAILURE() << "no column " << column;
  return {};
}

// Peers of GPU `gpu` when it has NVLinks of `links` to every other GPU of `count` (NVSwitch).
std::vector<NvlinkPeer> AllOthers(int gpu, int count, int links) {
  std::vector<NvlinkPeer> peers;
  for (int j = 0; j < count; ++j)
    if (j != gpu) peers.push_back({j, links});
  return peers;
}

std::vector<std::string> Names(const char* prefix, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

std::vector<std::pair<std::string, std::string>> Legend(int first_mlx, int count) {
  std::vector<std::pair<std::string, std::string>> legend;
  for (int i = 0; i < count; ++i)
    legend.emplace_back("NIC" + std::to_string(i), "mlx5_" + std::to_string(first_mlx + i));
  return legend;
}

struct CellFact {
  int gpu;
  const char* column;
  TopoCell want;
};
struct PeersFact {
  int gpu;
  std::vector<NvlinkPeer> want;
};
struct AffinityFact {
  int gpu;
  const char* cpu;
  const char* numa;
};

// Facts read off one text: by hand from the sample files, or for the inline cases.
struct TopoCase {
  const char* name = "";
  const char* file = nullptr;  // under testdata/reference/nvidia-smi; null for `text`
  const char* text = nullptr;
  int gpus = 0;
  std::vector<std::string> nics = {};
  std::vector<CellFact> cells = {};
  std::vector<PeersFact> peers = {};
  std::vector<AffinityFact> affinity = {};
  std::vector<std::pair<std::string, std::string>> legend = {};
};

// Properties every parsed topology has, whatever the input.
void ExpectConsistent(const GpuTopology& topo) {
  const std::size_t g = topo.gpus.size();
  ASSERT_EQ(topo.gpu_links.size(), g);
  ASSERT_EQ(topo.gpu_nic.size(), g);
  ASSERT_EQ(topo.cpu_affinity.size(), g);
  ASSERT_EQ(topo.numa_affinity.size(), g);
  for (std::size_t i = 0; i < g; ++i) {
    ASSERT_EQ(topo.gpu_links[i].size(), g);
    ASSERT_EQ(topo.gpu_nic[i].size(), topo.nics.size());
    for (std::size_t j = 0; j < g; ++j) {
      EXPECT_EQ(topo.gpu_links[i][j].kind == LinkKind::kSelf, i == j) << i << "," << j;
      EXPECT_NE(topo.gpu_links[i][j].kind, LinkKind::kUnknown) << i << "," << j;
    }
    for (const TopoCell& c : topo.gpu_nic[i]) {
      EXPECT_NE(c.kind, LinkKind::kUnknown);
      EXPECT_NE(c.kind, LinkKind::kSelf);
    }
  }
}

void CheckCase(const TopoCase& c, const std::string& text) {
  GpuTopology topo;
  const Status status = ParseTopoMatrix(text, &topo);
  ASSERT_TRUE(status.ok()) << status.reason();
  ExpectConsistent(topo);
  EXPECT_EQ(topo.gpus, Names("GPU", c.gpus));
  EXPECT_EQ(topo.nics, c.nics);
  for (const CellFact& f : c.cells) {
    const TopoCell got = CellAt(topo, f.gpu, f.column);
    EXPECT_EQ(got, f.want) << "GPU" << f.gpu << "-" << f.column << ": got "
                           << LinkKindName(got.kind) << got.nvlinks;
  }
  for (const PeersFact& f : c.peers) EXPECT_EQ(topo.PeersOf(f.gpu), f.want) << "GPU" << f.gpu;
  for (const AffinityFact& f : c.affinity) {
    EXPECT_EQ(topo.cpu_affinity.at(static_cast<std::size_t>(f.gpu)), f.cpu) << "GPU" << f.gpu;
    EXPECT_EQ(topo.numa_affinity.at(static_cast<std::size_t>(f.gpu)), f.numa) << "GPU" << f.gpu;
  }
  EXPECT_EQ(topo.nic_legend, c.legend);
}

const std::vector<TopoCase>& SampleCases() {
  static const std::vector<TopoCase> cases = {
      {
          .name = "a100_nv12_8nic_legend",
          .file = "topo-m_a100-sxm4-80gbx8_nv12_8nic.txt",
          .gpus = 8,
          .nics = Names("NIC", 8),
          .cells = {{0, "GPU1", Nv(12)},
                    {3, "GPU3", kSelf},
                    {6, "GPU2", Nv(12)},
                    {0, "NIC0", kPxb},
                    {0, "NIC2", kNode},
                    {0, "NIC4", kSys},
                    {3, "NIC3", kPxb},
                    {7, "NIC6", kPxb},
                    {7, "NIC4", kNode}},
          .peers = {{0, AllOthers(0, 8, 12)}, {7, AllOthers(7, 8, 12)}},
          .affinity = {{0, "0-31,64-95", "0"},
                       {3, "0-31,64-95", "0"},
                       {4, "32-63,96-127", "1"},
                       {7, "32-63,96-127", "1"}},
          .legend = Legend(0, 8),
      },
      {
          .name = "h100x1_raw_tabs_ansi_gpu_numa_id",
          .file = "topo-m_h100x1_raw-tabs-ansi_590.48.01.txt",
          .gpus = 1,
          .cells = {{0, "GPU0", kSelf}},
          .peers = {{0, {}}},
          .affinity = {{0, "0-19", "0"}},
      },
      {
          .name = "h100x8_nv18_no_nic",
          .file = "topo-m_h100x8_nv18_no-nic.txt",
          .gpus = 8,
          .cells = {{0, "GPU7", Nv(18)}, {3, "GPU4", Nv(18)}, {5, "GPU5", kSelf}},
          .peers = {{2, AllOthers(2, 8, 18)}, {7, AllOthers(7, 8, 18)}},
          .affinity = {{0, "0-51,104-155", "0"},
                       {3, "0-51,104-155", "0"},
                       {4, "52-103,156-207", "1"},
                       {7, "52-103,156-207", "1"}},
      },
      {
          .name = "h20_nv18_8nic_gpu_numa_id_trailing_blank",
          .file = "topo-m_h20x8_nv18_8nic_gpu-numa-id.txt",
          .gpus = 8,
          .nics = Names("NIC", 8),
          .cells = {{1, "GPU6", Nv(18)},
                    {0, "NIC0", kPix},
                    {0, "NIC1", kNode},
                    {0, "NIC4", kSys},
                    {5, "NIC5", kPix},
                    {5, "NIC4", kNode},
                    {7, "NIC3", kSys},
                    {7, "NIC7", kPix}},
          .peers = {{0, AllOthers(0, 8, 18)}, {7, AllOthers(7, 8, 18)}},
          .affinity = {{0, "0-47,96-143", "0"},
                       {3, "0-47,96-143", "0"},
                       {4, "48-95,144-191", "1"},
                       {7, "48-95,144-191", "1"}},
          .legend = Legend(1, 8),
      },
      {
          .name = "pcie4_all_sys_nic_at_phb",
          .file = "topo-m_pcie4gpu_all-sys_phb-nic_gpu007.txt",
          .gpus = 4,
          .nics = {"NIC0"},
          .cells = {{0, "GPU1", kSys},
                    {2, "GPU3", kSys},
                    {3, "GPU0", kSys},
                    {0, "NIC0", kPhb},
                    {1, "NIC0", kSys},
                    {3, "NIC0", kSys}},
          .peers = {{0, {}}, {3, {}}},
          .affinity = {{0, "96-107", "3"}, {1, "64-75", "2"}, {2, "0-11", "0"}, {3, "32-43", "1"}},
      },
      {
          .name = "pcie4_pix_pairs_sys_across_numa",
          .file = "topo-m_pcie4gpu_pix-pairs_sys_gpu008.txt",
          .gpus = 4,
          .nics = {"NIC0"},
          .cells = {{0, "GPU1", kPix},
                    {2, "GPU3", kPix},
                    {0, "GPU2", kSys},
                    {1, "GPU3", kSys},
                    {3, "NIC0", kSys}},
          .peers = {{0, {}}, {2, {}}},
          .affinity = {{0, "48-63", "3"}, {1, "48-63", "3"}, {2, "64-79", "4"}, {3, "64-79", "4"}},
      },
      {
          .name = "v100_dgx1_cube_mesh_mlx5_column_no_numa",
          .file = "topo-m_v100-sxm2x8_dgx1-hybrid-cube-mesh_1nic.txt",
          .gpus = 8,
          .nics = {"mlx5_0"},
          .cells = {{0, "GPU1", Nv(1)},
                    {0, "GPU3", Nv(2)},
                    {0, "GPU5", kSys},
                    {0, "mlx5_0", kNode},
                    {2, "mlx5_0", kPix},
                    {4, "mlx5_0", kSys}},
          .peers = {{0, {{1, 1}, {2, 1}, {3, 2}, {4, 2}}}, {5, {{1, 2}, {4, 1}, {6, 2}, {7, 1}}}},
          .affinity = {{0, "0-11,24-35", ""}, {4, "12-23,36-47", ""}, {7, "12-23,36-47", ""}},
      },
      {
          .name = "v100_cube_mesh_raw_tabs_old_legend",
          .file = "topo-m_v100x8_hybrid-cube-mesh_tabs_old-legend.txt",
          .gpus = 8,
          .cells = {{0, "GPU6", Nv(2)}, {0, "GPU4", kSys}, {7, "GPU7", kSelf}},
          .peers = {{0, {{1, 1}, {2, 1}, {3, 2}, {6, 2}}}, {4, {{2, 1}, {5, 2}, {6, 1}, {7, 2}}}},
          .affinity = {{0, "0-95", ""}, {7, "0-95", ""}},
      },
  };
  return cases;
}

TEST(TopoMatrixTest, ParsesEverySampleFile) {
  for (const TopoCase& c : SampleCases()) {
    SCOPED_TRACE(c.name);
    const std::string text = ReadFile(kSampleDir + "/" + c.file);
    ASSERT_FALSE(text.empty()) << "cannot read " << c.file;
    CheckCase(c, text);
  }
}

// Guards against a sample being added without facts to check.
TEST(TopoMatrixTest, TableCoversEverySampleFile) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(kSampleDir)) {
    const std::string file = entry.path().filename().string();
    if (file.starts_with("topo-m_") && file.ends_with(".txt")) on_disk.insert(file);
  }
  std::set<std::string> in_table;
  for (const TopoCase& c : SampleCases()) in_table.insert(c.file);
  EXPECT_EQ(on_disk, in_table);
  EXPECT_EQ(on_disk.size(), 8U);
}

// All real samples are symmetric; a parser mixing up rows and columns would break that.
TEST(TopoMatrixTest, SampleMatricesAreSymmetric) {
  for (const TopoCase& c : SampleCases()) {
    SCOPED_TRACE(c.name);
    GpuTopology topo;
    ASSERT_TRUE(ParseTopoMatrix(ReadFile(kSampleDir + "/" + c.file), &topo).ok());
    for (std::size_t i = 0; i < topo.gpus.size(); ++i)
      for (std::size_t j = 0; j < topo.gpus.size(); ++j)
        EXPECT_EQ(topo.gpu_links[i][j], topo.gpu_links[j][i]) << i << "," << j;
  }
}

// What a terminal or a paste does to raw output: TABs become spaces up to 8-column stops.
std::string ExpandTabs(std::string_view text) {
  std::string out;
  std::size_t column = 0;
  for (char ch : text) {
    if (ch == '\t') {
      do {
        out += ' ';
      } while (++column % 8 != 0);
    } else {
      out += ch;
      column = (ch == '\n') ? 0 : column + 1;
    }
  }
  return out;
}

// The raw samples parse the same once their TABs are expanded, as in a pasted copy.
TEST(TopoMatrixTest, RawSamplesParseTheSameTabExpanded) {
  for (const TopoCase& c : SampleCases()) {
    SCOPED_TRACE(c.name);
    const std::string text = ReadFile(kSampleDir + "/" + c.file);
    if (text.find('\t') == std::string::npos) continue;
    CheckCase(c, ExpandTabs(text));
  }
}

// Shapes the samples lack; each text is checked raw and with its TABs expanded.
TEST(TopoMatrixTest, ParsesInlineVariants) {
  const std::vector<TopoCase> cases = {
      {
          .name = "empty_affinity_cells_and_numa_range",
          .text = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                  "GPU0\t X \tNV4\tNV4\t\t0\t\tN/A\n"
                  "GPU1\tNV4\t X \tNV4\t0-7\t6-7\t\t2\n"
                  "GPU2\tNV4\tNV4\t X \t8-15\t\t\t3\n",
          .gpus = 3,
          .cells = {{0, "GPU1", Nv(4)}, {2, "GPU0", Nv(4)}},
          .peers = {{0, {{1, 4}, {2, 4}}}, {2, {{0, 4}, {1, 4}}}},
          .affinity = {{0, "", "0"}, {1, "0-7", "6-7"}, {2, "8-15", ""}},
      },
      {
          .name = "empty_numa_affinity_only",
          .text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                  "GPU0\t X \tPHB\t0-3\t\n"
                  "GPU1\tPHB\t X \tN/A\t1\n",
          .gpus = 2,
          .cells = {{0, "GPU1", kPhb}},
          .peers = {{0, {}}},
          .affinity = {{0, "0-3", ""}, {1, "", "1"}},
      },
      {
          .name = "old_driver_soc_crlf_ansi_rows",
          .text = "\t\x1b[4mGPU0\tGPU1\tmlx5_0\tCPU Affinity\x1b[0m\r\n"
                  "GPU0\t X \tSOC\t\x1b[1mPIX\x1b[0m\t0-7\r\n"
                  "GPU1\tSOC\t X \tSOC\t8-15\r\n"
                  "mlx5_0\tPIX\tSOC\t X \r\n"
                  "\r\n"
                  "Legend:\r\n"
                  "  X   = Self\r\n"
                  "  SOC  = Connection traversing PCIe as well as the SMP link between CPU "
                  "sockets(e.g. QPI)\r\n",
          .gpus = 2,
          .nics = {"mlx5_0"},
          .cells = {{0, "GPU1", kSys}, {0, "mlx5_0", kPix}, {1, "mlx5_0", kSys}},
          .peers = {{0, {}}},
          .affinity = {{0, "0-7", ""}, {1, "8-15", ""}},
      },
      {
          .name = "single_spaces_no_leading_blank_no_trailing_newline",
          .text = "GPU0 GPU1 GPU2 CPU Affinity NUMA Affinity\n"
                  "GPU0 X NV2 PXB 0-3 0\n"
                  "GPU1 NV2 X NV1 4-7 0\n"
                  "GPU2 PXB NV1 X 8,10,12 1",
          .gpus = 3,
          .cells = {{0, "GPU2", kPxb}, {1, "GPU2", Nv(1)}},
          .peers = {{1, {{0, 2}, {2, 1}}}, {2, {{1, 1}}}},
          .affinity = {{0, "0-3", "0"}, {2, "8,10,12", "1"}},
      },
      {
          .name = "blank_lines_before_and_nic_legend_without_blank",
          .text = "\n\n\tGPU0\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n"
                  "GPU0\t X \tPXB\tNODE\t0-31\t0\n"
                  "NIC0\tPXB\t X \tPIX\n"
                  "NIC1\tNODE\tPIX\t X \n"
                  "NIC Legend:\n"
                  "  NIC0: mlx5_0\n"
                  "  NIC1: mlx5_bond_0\n"
                  "\n"
                  "some trailing text: ignored\n",
          .gpus = 1,
          .nics = {"NIC0", "NIC1"},
          .cells = {{0, "NIC0", kPxb}, {0, "NIC1", kNode}},
          .peers = {{0, {}}},
          .affinity = {{0, "0-31", "0"}},
          .legend = {{"NIC0", "mlx5_0"}, {"NIC1", "mlx5_bond_0"}},
      },
  };
  for (const TopoCase& c : cases) {
    {
      SCOPED_TRACE(std::string(c.name) + "/raw");
      CheckCase(c, c.text);
    }
    {
      SCOPED_TRACE(std::string(c.name) + "/tab-expanded");
      CheckCase(c, ExpandTabs(c.text));
    }
  }
}

std::string ManyGpusHeader(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += "\tGPU" + std::to_string(i);
  return text + "\n";
}

TEST(TopoMatrixTest, RejectsMalformedInputWithTheLine) {
  struct BadCase {
    const char* name;
    std::string text;
    std::vector<std::string> want;  // substrings of the reason
  };
  const std::string two = "\tGPU0\tGPU1\n";
  const std::vector<BadCase> cases = {
      {"empty_text", "", {"line 1", "expected the header row", "end of input"}},
      {"blank_lines_only", "\n   \n\t\n", {"line 4", "header row", "end of input"}},
      {"legend_only", "Legend:\n\n  X    = Self\n", {"line 1", "header row", "'Legend:'"}},
      {"no_header",
       "GPU0\t X \tNV1\nGPU1\tNV1\t X \n",
       {"line 1", "looks like a matrix row", "is the header missing"}},
      {"header_starts_with_nic", "\tNIC0\tGPU0\n", {"line 1", "header row", "GPU0"}},
      {"header_only", two, {"line 2", "row for GPU0", "end of input", "square"}},
      {"duplicate_column", "\tGPU0\tGPU0\n", {"line 1", "'GPU0'", "twice"}},
      {"column_name_garbage", "\tGPU0\t\x01\x7f\n", {"line 1", "'\\x01\\x7f'", "device name"}},
      {"too_many_gpus", ManyGpusHeader(65), {"line 1", "65 GPUs", "64"}},
      {"row_too_few_cells",
       "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV1\tNV1\nGPU1\tNV1\n",
       {"line 3", "row GPU1", "1 link cell,", "expected 3"}},
      {"unknown_cell_code",
       two + "GPU0\t X \tFOO\nGPU1\tNV1\t X \n",
       {"line 2", "row GPU0, column GPU1", "unknown link code 'FOO'", "NV#"}},
      {"nv_without_count", two + "GPU0\t X \tNV\n", {"line 2", "'NV'"}},
      {"nv_zero", two + "GPU0\t X \tNV0\n", {"line 2", "'NV0'"}},
      {"lower_case_code", two + "GPU0\t X \tsys\n", {"line 2", "'sys'"}},
      {"fewer_rows_than_columns",
       "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV1\tNV1\nGPU1\tNV1\t X \tNV1\n",
       {"line 4", "row for GPU2", "only 2 rows", "square"}},
      {"more_cells_than_columns",
       two + "GPU0\t X \tNV1\tNV1\nGPU1\tNV1\t X \tNV1\n",
       {"line 2", "row GPU0", "1 cell after its 2 link cells", "0 other columns", "missing"}},
      {"more_rows_than_columns",
       two + "GPU0\t X \tNV1\nGPU1\tNV1\t X \nGPU2\tNV1\tNV1\t X \n",
       {"line 4", "'GPU2'", "square"}},
      {"rows_out_of_order", two + "GPU1\tNV1\t X \nGPU0\t X \tNV1\n", {"line 2", "row for GPU0"}},
      {"self_missing_on_diagonal",
       two + "GPU0\tSYS\tSYS\n",
       {"line 2", "column GPU0", "expected X"}},
      {"self_off_diagonal",
       two + "GPU0\t X \t X \n",
       {"line 2", "column GPU1", "X (the device itself) appears off the diagonal"}},
      {"bad_cpu_affinity",
       "\tGPU0\tCPU Affinity\nGPU0\t X \tzero\n",
       {"line 2", "CPU Affinity 'zero'"}},
      {"bad_numa_affinity",
       "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-3\tnode0\n",
       {"line 2", "NUMA Affinity 'node0'"}},
      {"cpu_list_with_dangling_dash",
       "\tGPU0\tCPU Affinity\nGPU0\t X \t0-\n",
       {"line 2", "CPU Affinity '0-'"}},
      {"bad_gpu_numa_id_after_empty_cpu_affinity",
       "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t\t0\t\tbad\n",
       {"line 2", "GPU NUMA ID 'bad'"}},
      {"too_many_affinity_cells",
       "\tGPU0\tCPU Affinity\nGPU0\t X \t0-3\t0\n",
       {"line 2", "2 cells after its 1 link cell", "1 other column (CPU Affinity)"}},
      {"nic_row_cell_unknown",
       "\tGPU0\tNIC0\nGPU0\t X \tPIX\nNIC0\tPIX\t?\n",
       {"line 3", "row NIC0, column NIC0", "'?'"}},
  };
  for (const BadCase& c : cases) {
    for (const bool expand : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (expand ? "/tab-expanded" : "/raw"));
      GpuTopology topo;
      topo.gpus = {"untouched"};
      const Status status = ParseTopoMatrix(expand ? ExpandTabs(c.text) : c.text, &topo);
      ASSERT_FALSE(status.ok());
      EXPECT_EQ(status.code(), Code::kError);
      EXPECT_THAT(status.reason(), StartsWith("line "));
      for (const std::string& w : c.want) EXPECT_THAT(status.reason(), HasSubstr(w));
      EXPECT_EQ(topo.gpus, std::vector<std::string>{"untouched"}) << "output changed on error";
    }
  }
}

TEST(TopoMatrixTest, RejectsNullOutput) {
  const Status status = ParseTopoMatrix("\tGPU0\nGPU0\t X \n", nullptr);
  EXPECT_EQ(status.code(), Code::kError);
}

TEST(TopoMatrixTest, PeersOfOutOfRangeIsEmpty) {
  GpuTopology topo;
  ASSERT_TRUE(ParseTopoMatrix("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X \n", &topo).ok());
  EXPECT_EQ(topo.PeersOf(0), (std::vector<NvlinkPeer>{{1, 2}}));
  EXPECT_TRUE(topo.PeersOf(-1).empty());
  EXPECT_TRUE(topo.PeersOf(2).empty());
}

TEST(TopoMatrixTest, LinkKindNames) {
  const std::vector<std::pair<LinkKind, std::string_view>> cases = {
      {LinkKind::kSelf, "X"},  {LinkKind::kNvlink, "NV#"},     {LinkKind::kPix, "PIX"},
      {LinkKind::kPxb, "PXB"}, {LinkKind::kPhb, "PHB"},        {LinkKind::kNode, "NODE"},
      {LinkKind::kSys, "SYS"}, {LinkKind::kUnknown, "unknown"}};
  for (const auto& [kind, name] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(LinkKindName(kind), name);
  }
}

// Whatever the bytes, the parser returns: either a consistent topology or an error naming a
// line. Run under ASan/UBSan to catch out-of-bounds reads.
void ExpectSurvives(const std::string& text) {
  GpuTopology topo;
  const Status status = ParseTopoMatrix(text, &topo);
  if (status.ok()) {
    ExpectConsistent(topo);
  } else {
    EXPECT_EQ(status.code(), Code::kError);
    EXPECT_THAT(status.reason(), StartsWith("line "));
  }
}

TEST(TopoMatrixTest, NeverCrashesOnGarbage) {
  std::mt19937 rng(20240611);  // fixed: failures must reproduce
  // Bytes biased towards the ones the parser looks at, so garbage gets past the header.
  const std::string alphabet = "\t\n\r \x1b[mGPUNICX0123456789NVPIXSYSNODE-,/A:";
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 400);
  for (int round = 0; round < 3000; ++round) {
    SCOPED_TRACE("random round " + std::to_string(round));
    std::string text;
    const int n = length(rng);
    for (int i = 0; i < n; ++i)
      text += (round % 2 == 0) ? static_cast<char>(byte(rng)) : alphabet[pick(rng)];
    ExpectSurvives(text);
  }

  // Every prefix and random mutations of each sample: almost-valid input.
  for (const TopoCase& c : SampleCases()) {
    SCOPED_TRACE(c.name);
    const std::string sample = ReadFile(kSampleDir + "/" + c.file);
    for (std::size_t len = 0; len <= sample.size(); ++len) ExpectSurvives(sample.substr(0, len));
    std::uniform_int_distribution<std::size_t> at(0, sample.size() - 1);
    for (int round = 0; round < 300; ++round) {
      std::string text = sample;
      for (int edits = 1 + round % 4; edits > 0; --edits) {
        const std::size_t pos = std::min(at(rng), text.size() - 1);
        switch (byte(rng) % 3) {
          case 0:
            text[pos] = static_cast<char>(byte(rng));
            break;
          case 1:
            text.erase(pos, 1 + static_cast<std::size_t>(byte(rng) % 8));
            break;
          default:
            text.insert(pos, 1, alphabet[pick(rng)]);
        }
        if (text.empty()) text = "x";
      }
      ExpectSurvives(text);
    }
  }
}

}  // namespace
}  // namespace tidal
