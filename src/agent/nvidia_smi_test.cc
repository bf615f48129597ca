// The nvidia-smi fallback: parsing of every sample, the source with a fake
// runner, and RunProgram (execve, timeout) with small scripts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>

#include "agent/agent_test_util.h"
#include "tidal/agent/gpu.h"
#include "tidal/gpu/topology.h"

namespace tidal::agent {
namespace {

using testing::Find;
using testing::ReadFile;

const std::string kSmiDir = std::string(TIDAL_TESTDATA_DIR) + "/reference/nvidia-smi/";
constexpr std::uint64_t kMiB = 1 << 20;

struct MemoryCase {
  const char* file;
  std::size_t gpus;
  std::uint64_t total_mib, used_mib, reserved_mib;  // of GPU 0
  const char* model;
  const char* uuid;
  const char* bus_id;
};

class SmiMemorySamples : public ::testing::TestWithParam<MemoryCase> {};

TEST_P(SmiMemorySamples, ParsesTheTopLevelFbBlockOfEveryGpu) {
  const MemoryCase& tc = GetParam();
  std::vector<GpuReading> g;
  const Status st = ParseSmiMemory(ReadFile(kSmiDir + tc.file), &g);
  ASSERT_TRUE(st.ok()) << st.reason();
  ASSERT_EQ(g.size(), tc.gpus);
  EXPECT_EQ(g[0].memory_total, tc.total_mib * kMiB);
  EXPECT_EQ(g[0].memory_used, tc.used_mib * kMiB);
  EXPECT_EQ(g[0].memory_reserved, tc.reserved_mib * kMiB);
  EXPECT_EQ(g[0].model, tc.model);
  EXPECT_EQ(g[0].uuid, tc.uuid);
  EXPECT_EQ(g[0].bus_id, tc.bus_id);
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i].index, static_cast<int>(i));
    EXPECT_TRUE(g[i].memory_total.has_value()) << "GPU " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Samples, SmiMemorySamples,
    ::testing::Values(MemoryCase{"q-memory-subset_a100-sxm4x4_555.42.02.txt", 4, 81920, 1, 763, "",
                                 "", "00000000:68:00.0"},
                      MemoryCase{"q-memory-subset_h100-sxm5x8_565.57.01.txt", 8, 81559, 1, 454, "",
                                 "", "00000000:18:00.0"},
                      MemoryCase{"q_h100_590.48.01_load.txt", 1, 81559, 19818, 479,
                                 "NVIDIA H100 80GB HBM3",
                                 "GPU-00000000-0000-0000-0000-000000000000", "00000000:00:09.0"},
                      // MIG: the parent's FB block, not the per-instance "Shared FB Memory Usage".
                      MemoryCase{"q_h100-mig_590.48.01_load.txt", 1, 81559, 11125, 479,
                                 "NVIDIA H100 80GB HBM3",
                                 "GPU-00000000-0000-0000-0000-000000000000", "00000000:00:09.0"}),
    [](const auto& p) {
      std::string n = p.param.file;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

struct BadCase {
  const char* name;
  const char* text;
  const char* reason_part;
};

class SmiMemoryErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(SmiMemoryErrors, NameTheLine) {
  std::vector<GpuReading> g;
  const Status st = ParseSmiMemory(GetParam().text, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find(GetParam().reason_part), std::string::npos) << st.reason();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SmiMemoryErrors,
    ::testing::Values(
        BadCase{"No_gpu_section", "==============NVSMI LOG==============\n", "no \"GPU"},
        BadCase{"Empty_output", "", "no \"GPU"},
        BadCase{"Garbage_value",
                "GPU 00000000:01:00.0\n    FB Memory Usage\n        Total : lots\n", "line 3"},
        BadCase{"Wrong_unit", "GPU 00000000:01:00.0\n    FB Memory Usage\n        Used : 5 GiB\n",
                "line 3"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ParseSmiMemory, NotAvailableMemoryIsAbsentNotAnError) {
  std::vector<GpuReading> g;
  ASSERT_TRUE(ParseSmiMemory("GPU 0000000F:01:00.0\n    FB Memory Usage\n        Total : N/A\n"
                             "        Used : N/A\n",
                             &g)
                  .ok());
  ASSERT_EQ(g.size(), 1u);
  EXPECT_FALSE(g[0].memory_total);
}

// Every sample in the directory is consumed by a parser test or listed as unused here.
TEST(SmiSamples, EverySampleIsCovered) {
  const std::set<std::string> unused = {
      "nvlink-s_h100_590.48.01.txt",  // link speeds; NVML gives them, nvidia-smi fallback does not
  };
  for (const auto& e : std::filesystem::directory_iterator(kSmiDir)) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    const std::string text = ReadFile(e.path().string());
    if (name.starts_with("query-gpu")) {
      std::vector<SmiGpuIdentity> ids;
      const Status st = ParseSmiGpuCsv(text, &ids);
      EXPECT_TRUE(st.ok()) << st.reason();
      EXPECT_FALSE(ids.empty());
    } else if (name.starts_with("q")) {
      if (name.ends_with(".csv")) {
        EXPECT_NE(text.find(", "), std::string::npos);  // per-process queries are not used
        continue;
      }
      std::vector<GpuReading> g;
      const Status st = ParseSmiMemory(text, &g);
      EXPECT_TRUE(st.ok()) << st.reason();
      EXPECT_FALSE(g.empty());
    } else if (name.starts_with("topo-m")) {
      GpuTopology t;
      const Status st = ParseTopoMatrix(text, &t);
      EXPECT_TRUE(st.ok()) << st.reason();
      EXPECT_FALSE(t.gpus.empty());
    } else {
      EXPECT_TRUE(unused.count(name)) << "sample not covered by any agent test";
    }
  }
}

// A runner that answers from sample files, keyed by the arguments.
CommandRunner FakeRunner(std::map<std::string, std::string> by_args,
                         std::vector<std::string>* seen) {
  return [by_args, seen](const std::vector<std::string>& argv, int, std::string* out) {
    std::string key;
    for (std::size_t i = 1; i < argv.size(); ++i) key += (i > 1 ? " " : "") + argv[i];
    if (seen) seen->push_back(argv[0] + " " + key);
    const auto it = by_args.find(key);
    if (it == by_args.end()) return Status::Error(argv[0] + ": no canned answer for " + key);
    if (it->second == "FAIL") return Status::Error(argv[0] + ": killed after the 5000 ms timeout");
    *out = it->second;
    return Status();
  };
}

struct SourceCase {
  const char* name;
  const char* memory_file;
  const char* topo_file;
  std::string identity_csv;
  std::size_t gpus;
  int peer_links_0_1;  // links between GPU 0 and 1; 0 = not linked
  std::string uuid_0, model_0;
};

const std::string kIdentityQuery = "--query-gpu=index,uuid,name,pci.bus_id --format=csv";

class SmiSourceCases : public ::testing::TestWithParam<SourceCase> {};

TEST_P(SmiSourceCases, MemoryIdentityAndPeersFromThreeFixedCommands) {
  const SourceCase& tc = GetParam();
  std::vector<std::string> seen;
  GpuCollector c(
      MakeNvidiaSmiSource("/usr/bin/nvidia-smi", 5000,
                          FakeRunner({{"-q -d MEMORY", ReadFile(kSmiDir + tc.memory_file)},
                                      {kIdentityQuery, tc.identity_csv},
                                      {"topo -m", ReadFile(kSmiDir + tc.topo_file)}},
                                     &seen)),
      "");
  MetricSet s("n1");
  const Status st = c.Collect(s);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(seen, (std::vector<std::string>{"/usr/bin/nvidia-smi -q -d MEMORY",
                                            "/usr/bin/nvidia-smi " + kIdentityQuery,
                                            "/usr/bin/nvidia-smi topo -m"}));
  EXPECT_EQ(testing::Count(s, "ai_gpu_memory_used_bytes"), tc.gpus);
  EXPECT_TRUE(Find(s, "ai_gpu_memory_used_bytes",
                   {{"gpu_id", "0"}, {"uuid", tc.uuid_0}, {"model", tc.model_0}}))
      << "GPU 0 carries its UUID and model";
  const auto links = Find(s, "ai_gpu_nvlink_peer_links", {{"gpu_id", "0"}, {"peer_gpu_id", "1"}});
  if (tc.peer_links_0_1 == 0) {
    EXPECT_FALSE(links);
  } else {
    EXPECT_EQ(links, static_cast<double>(tc.peer_links_0_1));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SmiSourceCases,
    ::testing::Values(
        // Rows in another order than the -q sections: matched by bus id, not position.
        SourceCase{"H100x8_nvswitch", "q-memory-subset_h100-sxm5x8_565.57.01.txt",
                   "topo-m_h100x8_nv18_no-nic.txt",
                   "index, uuid, name, pci.bus_id\n"
                   "1, GPU-b1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\n"
                   "0, GPU-a0, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n",
                   8, 18, "GPU-a0", "NVIDIA H100 80GB HBM3"},
        SourceCase{"A100x4_pcie_topology", "q-memory-subset_a100-sxm4x4_555.42.02.txt",
                   "topo-m_pcie4gpu_pix-pairs_sys_gpu008.txt",
                   "index, uuid, name, pci.bus_id\n"
                   "0, GPU-c0, NVIDIA A100-SXM4-40GB, 00000000:68:00.0\n",
                   4, 0, "GPU-c0", "NVIDIA A100-SXM4-40GB"},
        // The full -q has its own UUID and model; the CSV (every column) agrees.
        SourceCase{"H100x1_raw_tabs", "q_h100_590.48.01_load.txt",
                   "topo-m_h100x1_raw-tabs-ansi_590.48.01.txt",
                   ReadFile(kSmiDir + "query-gpu_h100_590.48.01_load.csv"), 1, 0,
                   "GPU-00000000-0000-0000-0000-000000000000", "NVIDIA H100 80GB HBM3"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ParseSmiGpuCsv, ReadsColumnsByHeaderName) {
  struct Case {
    std::string name, text;
    std::vector<std::string> want;  // "index uuid model bus" per GPU, or the error text
  };
  const std::vector<Case> cases = {
      {"query order",
       "index, uuid, name, pci.bus_id\n0, GPU-1, NVIDIA A10, 00000000:3b:00.0\n",
       {"0 GPU-1 NVIDIA A10 00000000:3B:00.0"}},
      {"other order, units, missing values",
       "name, memory.total [MiB], index, uuid\nNVIDIA A10, 23028 MiB, 3, [N/A]\n\n",
       {"3  NVIDIA A10 "}},
      {"no index column",
       "uuid, name\nGPU-1, A10\n",
       {"nvidia-smi --query-gpu line 1: expected a header with an \"index\" column"}},
      {"short row",
       "index, uuid, name\n0, GPU-1\n",
       {"nvidia-smi --query-gpu line 2: 2 cells, expected 3 as in the header"}},
      {"index not a number",
       "index, uuid\nzero, GPU-1\n",
       {"nvidia-smi --query-gpu line 2: index \"zero\" is not a GPU index"}},
      {"empty", "", {"nvidia-smi --query-gpu: empty output"}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::vector<SmiGpuIdentity> ids;
    const Status st = ParseSmiGpuCsv(tc.text, &ids);
    std::vector<std::string> got;
    if (!st.ok()) got.push_back(st.reason());
    for (const auto& id : ids)
      got.push_back(std::to_string(id.index) + " " + id.uuid + " " + id.model + " " + id.bus_id);
    EXPECT_EQ(got, tc.want);
  }
}

TEST(SmiSource, IdentityFailureKeepsMemoryAndSaysWhy) {
  GpuCollector c(MakeNvidiaSmiSource(
                     "nvidia-smi", 5000,
                     FakeRunner({{"-q -d MEMORY",
                                  ReadFile(kSmiDir + "q-memory-subset_h100-sxm5x8_565.57.01.txt")},
                                 {kIdentityQuery, "FAIL"},
                                 {"topo -m", ReadFile(kSmiDir + "topo-m_h100x8_nv18_no-nic.txt")}},
                                nullptr)),
                 "");
  MetricSet s("n1");
  const Status st = c.Collect(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("identity"), std::string::npos) << st.reason();
  EXPECT_EQ(testing::Count(s, "ai_gpu_memory_used_bytes"), 8u);
  EXPECT_TRUE(Find(s, "ai_gpu_nvlink_peer_links", {{"gpu_id", "0"}, {"peer_gpu_id", "1"}}));
}

TEST(SmiSource, TopologyFailureKeepsMemoryAndSaysWhy) {
  GpuCollector c(MakeNvidiaSmiSource(
                     "nvidia-smi", 5000,
                     FakeRunner({{"-q -d MEMORY", ReadFile(kSmiDir + "q_h100_590.48.01_load.txt")},
                                 {kIdentityQuery, "index\n0\n"},
                                 {"topo -m", "FAIL"}},
                                nullptr)),
                 "");
  MetricSet s("n1");
  const Status st = c.Collect(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("topology"), std::string::npos) << st.reason();
  EXPECT_EQ(testing::Count(s, "ai_gpu_memory_used_bytes"), 1u);
}

TEST(SmiSource, MemoryCommandFailureIsDown) {
  GpuCollector c(MakeNvidiaSmiSource("nvidia-smi", 5000, FakeRunner({}, nullptr)), "");
  MetricSet s("n1");
  const Status st = c.Collect(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("nvidia-smi"), std::string::npos) << st.reason();
}

class RunProgramTest : public ::testing::Test {
 protected:
  std::string Script(const std::string& name, const std::string& body) {
    const std::string p = dir_.Write(name, "#!/bin/sh\n" + body);
    chmod(p.c_str(), 0755);
    return p;
  }
  testing::TempDir dir_;
};

TEST_F(RunProgramTest, PassesArgumentsVerbatimWithoutAShell) {
  const std::string p = Script("echo-args", "for a in \"$@\"; do echo \"[$a]\"; done\n");
  std::string out;
  ASSERT_TRUE(RunProgram({p, "-q", "a b", "$(id)", ";rm"}, 5000, &out).ok());
  EXPECT_EQ(out, "[-q]\n[a b]\n[$(id)]\n[;rm]\n");
}

TEST_F(RunProgramTest, ServesAFakeNvidiaSmiEndToEnd) {
  const std::string sample = kSmiDir + "q_h100_590.48.01_load.txt";
  const std::string topo = kSmiDir + "topo-m_h100x1_raw-tabs-ansi_590.48.01.txt";
  const std::string csv = kSmiDir + "query-gpu_h100_590.48.01_load.csv";
  const std::string p =
      Script("nvidia-smi", "case \"$1\" in topo) cat '" + topo + "';; --query-gpu=*) cat '" + csv +
                               "';; *) cat '" + sample + "';; esac\n");
  GpuCollector c(MakeNvidiaSmiSource(p, 5000, RunProgram), "");
  MetricSet s("n1");
  const Status st = c.Collect(s);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(Find(s, "ai_gpu_memory_used_bytes",
                 {{"gpu_id", "0"}, {"uuid", "GPU-00000000-0000-0000-0000-000000000000"}}),
            19818.0 * kMiB);
}

TEST_F(RunProgramTest, AHangingProgramIsKilledAtTheTimeout) {
  const std::string p = Script("hang", "exec sleep 30\n");
  std::string out;
  const Status st = RunProgram({p}, 200, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("timeout"), std::string::npos) << st.reason();
}

TEST_F(RunProgramTest, NonZeroExitIsAnError) {
  const std::string p = Script("fail", "echo partial; exit 3\n");
  std::string out;
  EXPECT_FALSE(RunProgram({p}, 5000, &out).ok());
}

TEST_F(RunProgramTest, MissingProgramIsAnError) {
  std::string out;
  const Status st = RunProgram({dir_.path() + "/nope"}, 5000, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("cannot execute"), std::string::npos) << st.reason();
}

}  // namespace
}  // namespace tidal::agent
