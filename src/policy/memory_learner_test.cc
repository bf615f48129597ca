#include "tidal/policy/memory_learner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tidal/core/file.h"
#include "tidal/policy/cycle.h"

namespace tidal {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;

MemoryLearningConfig Config(double quantile, int min_samples, int window, double headroom) {
  MemoryLearningConfig c;
  c.enabled = true;
  c.quantile = quantile;
  c.min_samples = min_samples;
  c.window = window;
  c.headroom = headroom;
  return c;
}

TEST(MemoryLearner, QuantileOfRecentPeaks) {
  struct Case {
    const char* name;
    MemoryLearningConfig config;
    std::vector<int> peaks_gib;
    std::optional<Bytes> want;
  };
  const std::vector<Case> cases = {
      {"cold below minSamples", Config(0.95, 3, 64, 0.1), {10, 20}, std::nullopt},
      // Nearest rank of 10 peaks: ceil(0.95 × 10) = 10th, the largest; plus 10 %.
      {"p95 of ten",
       Config(0.95, 3, 64, 0.1),
       {10, 20, 30, 40, 50, 60, 70, 80, 90, 100},
       110 * kGi},
      {"median of ten",
       Config(0.5, 3, 64, 0.0),
       {100, 90, 80, 70, 60, 50, 40, 30, 20, 10},
       50 * kGi},
      // Only the last four are kept: 70 80 90 100.
      {"window drops the oldest",
       Config(0.5, 3, 4, 0.0),
       {10, 20, 30, 40, 50, 60, 70, 80, 90, 100},
       80 * kGi},
      // 1.05 × 3 GiB = 3225.6 MiB, rounded up to a whole MiB.
      {"rounded up to a MiB", Config(1.0, 1, 8, 0.05), {3}, Bytes{3226} << 20},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    MemoryLearner l(tc.config);
    for (int g : tc.peaks_gib) l.Observe("k", g * kGi);
    EXPECT_EQ(l.Estimate("k"), tc.want);
  }
}

TEST(MemoryLearner, IgnoresImpossiblePeaks) {
  MemoryLearner l(Config(0.5, 1, 8, 0));
  l.Observe("k", 0);
  l.Observe("k", -5);
  l.Observe("k", Bytes{1} << 60);
  EXPECT_EQ(l.samples("k"), 0u);
}

TEST(WorkloadKey, ImageRepositoryWithoutTagOrDigest) {
  struct Case {
    const char* name;
    std::string image;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"tag", "pytorch/pytorch:2.3-cuda12", "ml|pytorch/pytorch|GPU_HEAVY|0|2"},
      {"registry port kept", "registry:5000/team/llm:v2@sha256:abc",
       "ml|registry:5000/team/llm|GPU_HEAVY|0|2"},
      {"no tag", "registry:5000/team/llm", "ml|registry:5000/team/llm|GPU_HEAVY|0|2"},
      {"control bytes", "a\tb\n", "ml|a?b?|GPU_HEAVY|0|2"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PodDemand p;
    p.namespace_name = "ml";
    p.images = {tc.image};
    p.load_type = LoadType::kGpuHeavy;
    p.gpu_count = 2;
    EXPECT_EQ(WorkloadKey(p), tc.want);
  }
}

TEST(MemoryLearner, SerializeLoadRoundTrip) {
  MemoryLearner a(Config(0.95, 1, 3, 0));
  a.Observe("ns|img|INFERENCE|0|1", 5 * kGi);
  a.Observe("ns|img|INFERENCE|0|1", 7 * kGi);
  a.Observe("x|y|GPU_HEAVY|0|4", 1);
  EXPECT_TRUE(a.dirty());
  const std::string text = a.Serialize();
  EXPECT_FALSE(a.dirty());
  MemoryLearner b(Config(0.95, 1, 3, 0));
  ASSERT_TRUE(b.Load(text).ok());
  EXPECT_EQ(b.Serialize(), text);
  EXPECT_EQ(b.Estimate("ns|img|INFERENCE|0|1"), 7 * kGi);
}

TEST(MemoryLearner, LoadErrorsNameTheLineAndKeepWhatWasHeld) {
  struct Case {
    const char* name;
    std::string text;
    std::string want;
  };
  const std::string h = "# tidal learned GPU memory v1\n";
  const std::vector<Case> cases = {
      {"no header", "k\t1\n", "line 1: expected the header \"# tidal learned GPU memory v1\""},
      {"empty", "", "line 1: expected the header \"# tidal learned GPU memory v1\""},
      {"no tab", h + "k 1\n", "line 2: expected \"key<TAB>peak bytes ...\""},
      {"not a number", h + "k\t12x\n", "line 2: \"12x\" is not a peak in bytes (1 to 2^50)"},
      {"negative", h + "k\t-1\n", "line 2: \"-1\" is not a peak in bytes (1 to 2^50)"},
      {"double space", h + "k\t1  2\n", "line 2: \"\" is not a peak in bytes (1 to 2^50)"},
      {"repeated key", h + "k\t1\nk\t2\n", "line 3: key \"k\" repeated"},
      {"no peaks", h + "k\t\n", "line 2: no peaks for \"k\""},
      {"control byte in key", h + "k\x01\t1\n", "line 2: the key has a control character"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    MemoryLearner l(Config(0.5, 1, 8, 0));
    l.Observe("kept", kGi);
    const Status st = l.Load(tc.text);
    EXPECT_EQ(st.reason(), tc.want);
    EXPECT_EQ(l.samples("kept"), 1u) << "a failed load changes nothing";
  }
}

TEST(MemoryLearner, FilePersistenceSurvivesARestart) {
  const std::string dir = ::testing::TempDir() + "/learned-memory-test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/learned.tsv";
  std::filesystem::remove(path);
  MemoryLearner first(Config(0.5, 1, 8, 0));
  ASSERT_TRUE(LoadLearnedMemory(path, &first).ok()) << "a missing file is an empty start";
  first.Observe("k", 9 * kGi);
  ASSERT_TRUE(SaveLearnedMemory(path, &first).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  MemoryLearner second(Config(0.5, 1, 8, 0));
  ASSERT_TRUE(LoadLearnedMemory(path, &second).ok());
  EXPECT_EQ(second.Estimate("k"), 9 * kGi);
  std::ofstream(path) << "garbage\n";
  const Status st = LoadLearnedMemory(path, &second);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.reason().find(path + ": line 1"), std::string::npos) << st.reason();
  std::filesystem::remove_all(dir);
}

// A save that never reached the disk leaves an empty file or one cut short: no
// data and a warning, not a scheduler that cannot start. A file that is not
// ours (no header) stays an error, so the next save does not overwrite it.
TEST(MemoryLearner, AnEmptyOrTruncatedFileIsNoDataWithAWarning) {
  const std::string dir = ::testing::TempDir() + "tidal-learned-cut";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/learned.tsv";
  MemoryLearner full(Config(0.5, 1, 8, 0));
  full.Observe("workload-a", 9 * kGi);
  full.Observe("workload-b", 5 * kGi);
  ASSERT_TRUE(SaveLearnedMemory(path, &full).ok());
  std::string saved;
  ASSERT_TRUE(ReadRegularFile(path, 1 << 20, &saved).ok());
  const std::size_t cut = saved.find("workload-b") + 4;  // inside the second key
  struct Case {
    const char* name;
    std::string text;
    bool ok;
    std::string warning;  // empty: none
  };
  const Case cases[] = {
      {"empty", "", true, path + ": empty; starting with nothing learned"},
      {"cut inside a line", saved.substr(0, cut), true, "truncated"},
      {"whole", saved, true, ""},
      {"not ours", "key\t123\n", false, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << c.text;
    MemoryLearner l(Config(0.5, 1, 8, 0));
    std::string warning;
    const Status st = LoadLearnedMemory(path, &l, &warning);
    EXPECT_EQ(st.ok(), c.ok) << st.reason();
    if (c.warning.empty()) {
      EXPECT_TRUE(warning.empty()) << warning;
    } else {
      EXPECT_NE(warning.find(c.warning), std::string::npos) << warning;
      EXPECT_EQ(l.keys(), 0u);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(MemoryLearner, CycleStateUsesTheLearnedEstimateOnlyForUndeclaredPods) {
  PolicyConfig config;
  MemoryLearner l(Config(0.5, 1, 8, 0));
  PodDemand p;
  p.namespace_name = "ml";
  p.images = {"serve:1"};
  p.load_type = LoadType::kInference;
  p.gpu_count = 1;
  l.Observe(WorkloadKey(p), 21 * kGi);
  CycleState c;
  ASSERT_TRUE(BuildCycleState(config, p, &c, nullptr).ok());
  EXPECT_EQ(c.memory_need_per_gpu, 8 * kGi) << "the INFERENCE rule without a learner";
  ASSERT_TRUE(BuildCycleState(config, p, &c, &l).ok());
  EXPECT_EQ(c.memory_need_per_gpu, 21 * kGi);
  p.gpu_memory_per_gpu = 12 * kGi;
  p.gpu_memory_declared = true;
  ASSERT_TRUE(BuildCycleState(config, p, &c, &l).ok());
  EXPECT_EQ(c.memory_need_per_gpu, 12 * kGi) << "a declaration wins";
}

}  // namespace
}  // namespace tidal
