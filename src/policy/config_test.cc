#include "tidal/policy/config.h"

#include <gtest/gtest.h>

#include <limits>

#include "tidal/core/status.h"

namespace tidal {
namespace {

TEST(PolicyConfig, DefaultsComeFromDesign) {
  const PolicyConfig c = DefaultPolicyConfig();
  EXPECT_DOUBLE_EQ(c.thresholds.gpu_memory.warn, 0.70);
  EXPECT_DOUBLE_EQ(c.thresholds.gpu_memory.reject, 0.85);
  EXPECT_DOUBLE_EQ(c.thresholds.nvlink.warn, 0.30);
  EXPECT_DOUBLE_EQ(c.thresholds.nvlink.reject, 0.60);
  EXPECT_DOUBLE_EQ(c.thresholds.await_ms.warn, 40);
  EXPECT_DOUBLE_EQ(c.thresholds.await_ms.reject, 70);
  EXPECT_DOUBLE_EQ(c.reject_threshold_safety_margin, 0.03);
  EXPECT_NEAR(c.gpu_memory_decay_slope, 0.12, 1e-12);
  EXPECT_EQ(c.metric_cache_ttl_ms, 20'000);
  EXPECT_EQ(c.query_timeout_ms, 5'000);
  EXPECT_EQ(c.nvlink.slots_per_gpu, 2);
  EXPECT_EQ(c.fallback.stage2_after_ms, 10'000);
  EXPECT_EQ(c.fallback.golden_pool.at("tidal.io/pool"), "golden");
  ASSERT_EQ(c.plugins.size(), 3u);
  EXPECT_EQ(c.plugins[0].name, "loadaware");
  EXPECT_EQ(c.plugins[1].name, "gpufit");
  EXPECT_EQ(c.plugins[2].name, "balance");
}

TEST(PolicyConfig, EveryErrorIsReportedWithItsPath) {
  struct Case {
    const char* name;
    const char* yaml;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"empty file is the defaults", "", {}},
      {"reject threshold out of range",
       "thresholds: {gpuMemory: {reject: 1.7}}",
       {"thresholds.gpuMemory.reject: 1.7 is outside [0, 1]"}},
      {"warn above reject",
       "thresholds: {nvlink: {warn: 0.7, reject: 0.6}}",
       {"thresholds.nvlink.warn: 0.7 must be below reject 0.6"}},
      {"not a number",
       "rejectThresholdSafetyMargin: lots",
       {"rejectThresholdSafetyMargin: \"lots\" is not a finite number"}},
      {"NaN is not a number",
       "thresholds: {gpuMemory: {reject: .nan}}",
       {"thresholds.gpuMemory.reject: \".nan\" is not a finite number"}},
      {"several errors at once",
       "thresholds: {gpuMemory: {reject: 1.7}}\nmetricCacheTTL: soon\nnvlink: {slotsPerGpu: 0}",
       {"thresholds.gpuMemory.reject: 1.7 is outside [0, 1]",
        "metricCacheTTL: \"soon\" is not a duration (expected e.g. 20s, 500ms, 2m)",
        "nvlink.slotsPerGpu: must be >= 1"}},
      {"typo in a key",
       "thresholds: {gpuMem: {reject: 0.8}}",
       {"thresholds.gpuMem: unknown field (expected one of: gpuMemory, nvlink, storageAwaitMs)"}},
      {"unknown plugin",
       "plugins: {magic: {}}",
       {"plugins.magic: unknown plugin (expected one of: loadaware, gpufit, balance, resourcefit, "
         "k8sdefault, bestfit, fallback, milligpu, random, dotprod, gpuclustering, gpupacking, "
         "bestfitmilli, fgd)"}},
      {"plugin args are validated by the plugin", "plugins: {balance: {args: {mode: fill}}}",
       {"plugins.balance.args.mode: \"fill\" (expected spread or pack)"}},
      {"plugin weight",
       "plugins: {balance: {weight: 0}}",
       {"plugins.balance.weight: 0 is outside (0, 100]"}},
      {"tenant range",
       "tenants: {research: {podThresholdRange: {min: 0.9, max: 0.8}}}",
       {"tenants.research.podThresholdRange.min: 0.9 is above max 0.8"}},
      // Found by fuzz_config: a tenant key with control bytes did not survive the dump.
      {"tenant name not a namespace", "tenants: {\"Team A\\x05\": {}}",
       {"tenants: \"Team A\\x05\" is not a namespace name (lowercase letters, digits and '-', at most 63)"}},
      {"decay slope larger than the threshold", "gpuMemoryDecaySlope: 0.9",
       {"gpuMemoryDecaySlope: 0.9 is outside (0, 0.82] (the effective GPU memory reject threshold)"}},
      // Found by fuzz_config: an unset slope came out negative and the dump did not load.
      {"margin leaves no warning band",
       "thresholds: {gpuMemory: {warn: 0.75, reject: 0.875}}\nrejectThresholdSafetyMargin: 0.25",
       {"rejectThresholdSafetyMargin: 0.25 puts the effective GPU memory reject threshold at "
        "0.625, not above warn 0.75"}},
      {"margin leaves a tenant no warning band",
       "rejectThresholdSafetyMargin: 0.25\nthresholds: {gpuMemory: {warn: 0.5, reject: 0.875}}\n"
       "tenants: {batch: {thresholds: {gpuMemory: {warn: 0.75, reject: 0.875}}}}",
       {"tenants.batch.thresholds.gpuMemory.reject: 0.875 minus rejectThresholdSafetyMargin 0.25 "
        "is not above warn 0.75"}},
      {"forecast smoothing", "loadForecast: {alpha: 0, beta: 2, horizon: 1h}",
       {"loadForecast.horizon: must be at most 10m", "loadForecast.alpha: 0 is outside (0, 1]",
        "loadForecast.beta: 2 is outside [0, 1]"}},
      {"learning window", "memoryLearning: {minSamples: 10, window: 4, quantile: 0.2}",
       {"memoryLearning.quantile: 0.2 is outside [0.5, 1]",
        "memoryLearning.minSamples: must not exceed window 4"}},
      {"when all rejected", "whenAllRejected: random",
       {"whenAllRejected: \"random\" (expected pending or least-loaded)"}},
      {"unknown load type in the estimate",
       "memoryEstimate: {byLoadType: {HUGE: 1Gi}}",
       {"memoryEstimate.byLoadType.HUGE: unknown load type (expected GPU_HEAVY, IO_HEAVY, "
        "NVLINK_HEAVY "
        "or INFERENCE)"}},
      {"golden pool must select something",
       "fallback: {goldenPool: {}}",
       {"fallback.goldenPool: must select at least one label"}},
      {"root must be a mapping", "[1, 2]", {"(root): expected a mapping"}},
      // YAML is Unicode text: a path with stray bytes would be rewritten by the dump.
      {"learning file not UTF-8", "memoryLearning: {file: \"a\xff\xfe" "b\"}",
       {"memoryLearning.file: \"a\xff\xfe" "b\" is not valid UTF-8 text"}},
      {"image pattern not UTF-8", "nvlink: {autoDetect: {imagePatterns: [\"ok\", \"\xc0\xafx\"]}}",
       {"nvlink.autoDetect.imagePatterns[1]: \"\xc0\xafx\" is not valid UTF-8 text"}},
      {"golden pool label not UTF-8", "fallback: {goldenPool: {pool: \"g\xed\xa0\x80\"}}",
       {"fallback.goldenPool.pool: \"g\xed\xa0\x80\" is not valid UTF-8 text",
        "fallback.goldenPool: must select at least one label"}},
      {"UTF-8 learning file is kept", "memoryLearning: {file: \"/var/lib/tidal/m\xc3\xa9moire.json\"}",
       {}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    ParsePolicyConfig(YAML::Load(tc.yaml), errors);
    EXPECT_EQ(errors.items(), tc.want);
  }
}

TEST(PolicyConfig, LoadThrowsWithAllErrors) {
  try {
    LoadPolicyConfig(
        YAML::Load("thresholds: {gpuMemory: {reject: 1.7}}\nnvlink: {slotsPerGpu: 0}"));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message.find("thresholds.gpuMemory.reject"), std::string::npos);
    EXPECT_NE(e.message.find("nvlink.slotsPerGpu"), std::string::npos);
  }
}

TEST(PolicyConfig, DumpRoundTrips) {
  const PolicyConfig a = LoadPolicyConfig(YAML::Load(R"(
thresholds: {gpuMemory: {warn: 0.6, reject: 0.8}}
metricCacheTTL: 30s
tenants: {research: {podThresholdRange: {min: 0.5, max: 0.7}}}
plugins: {loadaware: {weight: 2}, balance: {args: {mode: pack}}}
)"));
  const PolicyConfig b = LoadPolicyConfig(YAML::Load(DumpPolicyConfig(a)));
  EXPECT_EQ(a.thresholds, b.thresholds);
  EXPECT_EQ(a.metric_cache_ttl_ms, b.metric_cache_ttl_ms);
  ASSERT_EQ(b.tenants.size(), 1u);
  EXPECT_DOUBLE_EQ(b.tenants[0].pod_threshold_max, 0.7);
  ASSERT_EQ(b.plugins.size(), 2u);
  EXPECT_DOUBLE_EQ(b.plugins[0].weight, 2);
  EXPECT_EQ(b.plugins[1].ArgsNode()["mode"].as<std::string>(), "pack");
}

// check-config prints the effective config; loading that output must give the same
// config. Byte sizes used to be printed rounded ("1.0Ki" for 1025, "8.0Ei" for the
// largest value, which then failed to load).
TEST(PolicyConfig, DumpKeepsByteSizesExact) {
  const PolicyConfig a = LoadPolicyConfig(YAML::Load(R"(
memoryEstimate:
  cudaContext: 1025
  default: 9223372036854775807
  byLoadType: {INFERENCE: 1.5Gi}
)"));
  const std::string dumped = DumpPolicyConfig(a);
  const PolicyConfig b = LoadPolicyConfig(YAML::Load(dumped));
  EXPECT_EQ(b.memory_estimate.cuda_context, 1025) << dumped;
  EXPECT_EQ(b.memory_estimate.fallback, std::numeric_limits<Bytes>::max()) << dumped;
  EXPECT_EQ(b.memory_estimate.by_load_type.at(LoadType::kInference), Bytes{3} << 29) << dumped;
  EXPECT_EQ(DumpPolicyConfig(b), dumped);
}

TEST(Duration, Parse) {
  EXPECT_EQ(ParseDurationMs("20s"), 20'000);
  EXPECT_EQ(ParseDurationMs("500ms"), 500);
  EXPECT_EQ(ParseDurationMs("2m"), 120'000);
  EXPECT_EQ(ParseDurationMs("1.5"), 1'500);
  EXPECT_EQ(ParseDurationMs("1h"), 3'600'000);
  EXPECT_EQ(ParseDurationMs(""), std::nullopt);
  EXPECT_EQ(ParseDurationMs("s"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("10 s"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("-1s"), std::nullopt);
}

}  // namespace
}  // namespace tidal
