#include "policy/plugins/milligpu/milligpu.h"

#include <gtest/gtest.h>

#include <set>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(MilliGpu, FitsAndPlaces) {
  struct Case {
    const char* name;
    std::vector<int> free;
    std::string node_model;
    std::int64_t cpu_left;
    int gpus, milli;
    std::vector<std::string> models;
    GpuPick pick;
    std::vector<int> want_gpus;  // empty: unfit
    std::string want_reason;
  };
  const Case cases[] = {
      {"share best-fit", {1000, 500, 300}, "V100M16", 8000, 1, 460, {}, GpuPick::kBestFit, {1}, ""},
      {"share worst-fit",
       {1000, 500, 300},
       "V100M16",
       8000,
       1,
       460,
       {},
       GpuPick::kWorstFit,
       {0},
       ""},
      {"whole GPUs by index",
       {1000, 500, 1000, 1000},
       "V100M16",
       8000,
       2,
       1000,
       {},
       GpuPick::kBestFit,
       {0, 2},
       ""},
      {"too few whole GPUs",
       {1000, 500},
       "V100M16",
       8000,
       2,
       1000,
       {},
       GpuPick::kBestFit,
       {},
       "1 whole GPUs free, 2 needed"},
      {"no share left",
       {400, 300},
       "V100M16",
       8000,
       1,
       460,
       {},
       GpuPick::kBestFit,
       {},
       "no GPU with 460 milli-GPU free"},
      {"model accepted", {1000}, "T4", 8000, 1, 1000, {"P100", "T4"}, GpuPick::kBestFit, {0}, ""},
      {"model refused",
       {1000},
       "V100M16",
       8000,
       1,
       1000,
       {"T4"},
       GpuPick::kBestFit,
       {},
       "GPU model V100M16 not accepted (T4)"},
      {"CPU short",
       {1000},
       "V100M16",
       3000,
       1,
       1000,
       {},
       GpuPick::kBestFit,
       {},
       "CPU 4000m requested, 3000m left"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    MilliGpuArgs args;
    args.pick = tc.pick;
    MilliGpu plugin(args);
    const NodeState node =
        NodeBuilder("n").MilliFree(tc.free, tc.node_model).Resources(tc.cpu_left, 64 * kGi).Build();
    const PodDemand pod =
        PodBuilder().Milli(tc.gpus, tc.milli).Models(tc.models).Requests(4000, 8 * kGi).Build();
    NodeScratch scratch;
    const Status s = plugin.FilterOne(Cycle(DefaultPolicyConfig(), pod), node, scratch);
    EXPECT_EQ(s.ok(), !tc.want_gpus.empty());
    EXPECT_EQ(s.reason(), tc.want_reason);
    if (s.ok()) {
      EXPECT_TRUE(scratch.placed);
      EXPECT_EQ(scratch.gpus.Indices(), tc.want_gpus);
    }
  }
}

// pick random: the FGD simulator's Random baseline. Only fitting GPUs, each of
// them for some pod, and the same pod on the same node always the same GPU.
TEST(MilliGpu, RandomPickDrawsAFittingGpu) {
  MilliGpuArgs args;
  args.pick = GpuPick::kRandom;
  args.seed = 42;
  MilliGpu plugin(args);
  const NodeState node = NodeBuilder("n")
                             .MilliFree({1000, 300, 500, 460}, "V100M16")
                             .Resources(8000, 64 * kGi)
                             .Build();
  std::set<int> seen;
  for (int i = 0; i < 64; ++i) {
    const PodDemand pod =
        PodBuilder("p" + std::to_string(i)).Milli(1, 460).Requests(4000, 8 * kGi).Build();
    NodeScratch a, b;
    ASSERT_TRUE(plugin.FilterOne(Cycle(DefaultPolicyConfig(), pod), node, a).ok());
    plugin.FilterOne(Cycle(DefaultPolicyConfig(), pod), node, b);
    ASSERT_EQ(a.gpus.Count(), 1);
    EXPECT_EQ(a.gpus.Indices(), b.gpus.Indices());
    seen.insert(a.gpus.Indices().front());
  }
  EXPECT_EQ(seen, (std::set<int>{0, 2, 3}));  // GPU 1 has only 300 free
}

TEST(MilliGpu, CpuOnlyPodsNeedOnlyCpuAndMemory) {
  MilliGpu plugin({});
  const PodDemand pod = PodBuilder().Requests(4000, 8 * kGi).Build();
  NodeScratch scratch;
  const NodeState cpu_node = NodeBuilder("c").Resources(8000, 16 * kGi).Build();
  EXPECT_TRUE(plugin.FilterOne(Cycle(DefaultPolicyConfig(), pod), cpu_node, scratch).ok());
  const NodeState small = NodeBuilder("c").Resources(8000, 4 * kGi).Build();
  EXPECT_EQ(plugin.FilterOne(Cycle(DefaultPolicyConfig(), pod), small, scratch).reason(),
            "memory 8192 MiB requested, 4096 MiB left");
}

TEST(MilliGpu, Args) {
  ConfigErrors errors;
  EXPECT_NE(NewMilliGpu(YAML::Load("{gpuPick: worst-fit}"), "p", errors), nullptr);
  EXPECT_EQ(NewMilliGpu(YAML::Load("{gpuPick: tightest, x: 1}"), "p", errors), nullptr);
  EXPECT_EQ(errors.items(),
            (std::vector<std::string>{
                "p.x: unknown field (expected one of: gpuPick, seed)",
                "p.gpuPick: \"tightest\" (expected best-fit, worst-fit or random)"}));
}

// The seed arg is read as every plugin's (yamlutil::ReadSeed, seed_arg_test.cc):
// here, its default and that a 64-bit seed reaches the args.
TEST(MilliGpu, SeedArgIsA64BitSeed) {
  ConfigErrors errors;
  EXPECT_EQ(MilliGpuArgs::Parse(YAML::Load("{}"), "p", errors).seed, 0U);
  EXPECT_EQ(MilliGpuArgs::Parse(YAML::Load("{seed: 18446744073709551615}"), "p", errors).seed,
            18446744073709551615ULL);
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace tidal
