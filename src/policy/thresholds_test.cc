#include <gtest/gtest.h>

#include <limits>

#include "testing/builders.h"
#include "tidal/policy/cycle.h"

namespace tidal {
namespace {

using namespace tidal::testing;

PolicyConfig WithTenants() {
  return LoadPolicyConfig(YAML::Load(R"(
tenants:
  research:
    thresholds: {gpuMemory: {warn: 0.75, reject: 0.92}}
    podThresholdRange: {min: 0.60, max: 0.90}
  batch: {}
)"));
}

TEST(Thresholds, ResolutionFollowsClusterNamespaceAndPod) {
  struct Case {
    const char* name;
    PodDemand pod;
    double want_mem_warn;
    double want_mem_reject;
  };
  const Case cases[] = {
      {"cluster defaults with the margin", PodBuilder().Build(), 0.70, 0.82},
      {"namespace thresholds", PodBuilder().Namespace("research").Build(), 0.75, 0.89},
      {"a tenant without overrides inherits the cluster's", PodBuilder().Namespace("batch").Build(),
       0.70, 0.82},
      {"annotation inside the namespace's range",
       PodBuilder().Namespace("research").RejectThreshold(0.80).Build(), 0.75, 0.77},
      {"annotation cannot raise beyond the namespace's maximum",
       PodBuilder().Namespace("research").RejectThreshold(1.0).Build(), 0.75, 0.87},
      {"annotation cannot go below the namespace's minimum",
       PodBuilder().Namespace("research").RejectThreshold(0.1).Build(), 0.57, 0.57},
      {"no tenant: an annotation may only lower the threshold",
       PodBuilder().RejectThreshold(0.99).Build(), 0.70, 0.82},
      {"no tenant: lowering works", PodBuilder().RejectThreshold(0.60).Build(), 0.57, 0.57},
  };
  const PolicyConfig config = WithTenants();
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const EffectiveThresholds t = ResolveThresholds(config, tc.pod);
    EXPECT_NEAR(t.gpu_memory.warn, tc.want_mem_warn, 1e-9);
    EXPECT_NEAR(t.gpu_memory.reject, tc.want_mem_reject, 1e-9);
  }
}

TEST(Thresholds, MarginLowersFractionsByThePointsAndAwaitByPercent) {
  const EffectiveThresholds t = ResolveThresholds(DefaultPolicyConfig(), PodBuilder().Build());
  EXPECT_NEAR(t.nvlink.reject, 0.57, 1e-9);
  EXPECT_NEAR(t.await_ms.reject, 67.9, 1e-9);
  EXPECT_NEAR(t.nvlink.warn, 0.30, 1e-9);
  EXPECT_NEAR(t.await_ms.warn, 40, 1e-9);
}

TEST(Thresholds, ExplicitDecaySlopeSetsTheBandWidth) {
  const PolicyConfig c = LoadPolicyConfig(YAML::Load("{gpuMemoryDecaySlope: 0.05}"));
  const EffectiveThresholds t = ResolveThresholds(c, PodBuilder().Build());
  EXPECT_NEAR(t.gpu_memory.reject, 0.82, 1e-9);
  EXPECT_NEAR(t.gpu_memory.warn, 0.77, 1e-9);
  EXPECT_NEAR(DefaultPolicyConfig().gpu_memory_decay_slope, 0.12, 1e-9);
}

TEST(Thresholds, BandPositionIsClampedAndSafeWhenDegenerate) {
  EXPECT_DOUBLE_EQ(BandPosition(0.5, {0.7, 0.85}), 0);
  EXPECT_DOUBLE_EQ(BandPosition(0.9, {0.7, 0.85}), 1);
  EXPECT_DOUBLE_EQ(BandPosition(0.6, {0.6, 0.6}), 0);
  EXPECT_DOUBLE_EQ(BandPosition(0.61, {0.6, 0.6}), 1);
}

TEST(Cycle, MalformedPodIsUnresolvableEverywhere) {
  const PodDemand pod =
      PodBuilder().Invalid("annotation ai.gpu-reject-threshold: \"NaN\" is not a number").Build();
  CycleState cs;
  const Status s = BuildCycleState(DefaultPolicyConfig(), pod, &cs);
  EXPECT_EQ(s.code(), Code::kUnresolvable);
  EXPECT_NE(s.reason().find("ai.gpu-reject-threshold"), std::string::npos);
}

TEST(Cycle, NvlinkDetection) {
  struct Case {
    const char* name;
    PodDemand pod;
    bool want;
  };
  const Case cases[] = {
      {"explicit requirement", PodBuilder().Gpus(1).NvlinkRequired().Build(), true},
      {"pytorch image with two GPUs",
       PodBuilder().Gpus(2).Image("nvcr.io/nvidia/pytorch:24.01").Build(), true},
      {"seed fix: pytorch image with one GPU is not NVLink",
       PodBuilder().Gpus(1).Image("pytorch/pytorch:2.1").Build(), false},
      {"auto annotation with two GPUs", PodBuilder().Gpus(2).AutoNvlink().Build(), true},
      {"auto annotation with one GPU", PodBuilder().Gpus(1).AutoNvlink().Build(), false},
      {"another image with two GPUs", PodBuilder().Gpus(2).Image("tensorflow/tensorflow").Build(),
       false},
  };
  const PolicyConfig c = DefaultPolicyConfig();
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(PodUsesNvlink(c.nvlink, tc.pod), tc.want);
  }
}

TEST(Cycle, MemoryEstimate) {
  const MemoryEstimate e;
  PodDemand declared = PodBuilder().Gpus(1).Memory(20 * kGi).Build();
  EXPECT_EQ(EstimateMemoryNeed(e, declared), 20 * kGi);
  PodDemand model = PodBuilder().Gpus(2).Build();
  model.model_size = 4 * kGi;  // 1 GiB context + 3 × 4 GiB / 2 GPUs
  EXPECT_EQ(EstimateMemoryNeed(e, model), 7 * kGi);
  EXPECT_EQ(EstimateMemoryNeed(e, PodBuilder().Gpus(1).LoadType(LoadType::kGpuHeavy).Build()),
            16 * kGi);
  EXPECT_EQ(EstimateMemoryNeed(e, PodBuilder().Gpus(1).Build()), 8 * kGi);
  // An absurd model size (an annotation: user input) saturates, never wraps.
  PodDemand absurd = PodBuilder().Gpus(1).Build();
  absurd.model_size = std::numeric_limits<Bytes>::max() / 2;  // 3 × that overflows
  EXPECT_EQ(EstimateMemoryNeed(e, absurd), std::numeric_limits<Bytes>::max());
}

}  // namespace
}  // namespace tidal
