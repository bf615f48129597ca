#include "tidal/policy/config.h"

#include <gtest/gtest.h>

#include <limits>

#include "tidal/core/status.h"
#include "tidal/policy/registry.h"

namespace tidal {
namespace {

// The defaults of docs/design.md#thresholds and the sections after it.
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
  ASSERT_EQ(c.plugins.size(), 4u);
  EXPECT_EQ(c.plugins[0].name, "loadaware");
  EXPECT_EQ(c.plugins[1].name, "gpufit");
  EXPECT_EQ(c.plugins[2].name, "balance");
  // FGD on the learned workload, and only where Tidal's device plugin gives the
  // GPUs chosen (docs/traces.md measures the weight).
  EXPECT_EQ(c.plugins[3].name, "fgd");
  EXPECT_DOUBLE_EQ(c.plugins[3].weight, 0.25);
  const YAML::Node fgd = c.plugins[3].ArgsNode();
  EXPECT_EQ(fgd["tasks"].as<std::string>(), "learned");
  EXPECT_EQ(fgd["wholeGpuScoreStep"].as<int>(), 3);
  EXPECT_TRUE(fgd["onlyWithTidalDevicePlugin"].as<bool>());
  for (const PluginConfig& p : c.plugins) {
    SCOPED_TRACE(p.name);
    ConfigErrors errors;
    EXPECT_NE(FindPlugin(p.name)->make(p.ArgsNode(), p.name, errors), nullptr) << errors.Joined();
  }
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
      {"plugin args are validated by the plugin",
       "plugins: {balance: {args: {mode: fill}}}",
       {"plugins.balance.args.mode: \"fill\" (expected spread or pack)"}},
      {"plugin weight",
       "plugins: {balance: {weight: 0}}",
       {"plugins.balance.weight: 0 is outside (0, 100]"}},
      {"tenant range",
       "tenants: {research: {podThresholdRange: {min: 0.9, max: 0.8}}}",
       {"tenants.research.podThresholdRange.min: 0.9 is above max 0.8"}},
      // Found by fuzz_config: a tenant key with control bytes did not survive the dump.
      {"tenant name not a namespace",
       "tenants: {\"Team A\\x05\": {}}",
       {"tenants: \"Team A\\x05\" is not a namespace name (lowercase letters, digits and '-', at "
        "most 63)"}},
      {"decay slope larger than the threshold",
       "gpuMemoryDecaySlope: 0.9",
       {"gpuMemoryDecaySlope: 0.9 is outside (0, 0.82] (the effective GPU memory reject "
        "threshold)"}},
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
      {"forecast smoothing",
       "loadForecast: {alpha: 0, beta: 2, horizon: 1h}",
       {"loadForecast.horizon: must be at most 10m", "loadForecast.alpha: 0 is outside (0, 1]",
        "loadForecast.beta: 2 is outside [0, 1]"}},
      {"learning window",
       "memoryLearning: {minSamples: 10, window: 4, quantile: 0.2}",
       {"memoryLearning.quantile: 0.2 is outside [0.5, 1]",
        "memoryLearning.minSamples: must not exceed window 4"}},
      {"when all rejected",
       "whenAllRejected: random",
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
      {"learning file not UTF-8",
       "memoryLearning: {file: \"a\xff\xfe"
       "b\"}",
       {"memoryLearning.file: \"a\xff\xfe"
        "b\" is not valid UTF-8 text"}},
      {"image pattern not UTF-8",
       "nvlink: {autoDetect: {imagePatterns: [\"ok\", \"\xc0\xafx\"]}}",
       {"nvlink.autoDetect.imagePatterns[1]: \"\xc0\xafx\" is not valid UTF-8 text"}},
      {"golden pool label not UTF-8",
       "fallback: {goldenPool: {pool: \"g\xed\xa0\x80\"}}",
       {"fallback.goldenPool.pool: \"g\xed\xa0\x80\" is not valid UTF-8 text",
        "fallback.goldenPool: must select at least one label"}},
      {"UTF-8 learning file is kept",
       "memoryLearning: {file: \"/var/lib/tidal/m\xc3\xa9moire.json\"}",
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

TEST(PolicyConfig, MetricsSourceErrorsNameTheirField) {
  struct Case {
    const char* name;
    const char* yaml;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"the exporters for every dimension",
       "metricsSource: {gpuMemory: dcgm-exporter, nvlink: dcgm-exporter, storage: node-exporter}",
       {}},
      {"the shorthand", "metricsSource: dcgm-exporter+node-exporter", {}},
      {"an unknown shorthand",
       "metricsSource: dcgm",
       {"metricsSource: \"dcgm\" (expected tidal-agent, dcgm-exporter+node-exporter, or a "
        "mapping with gpuMemory, nvlink and storage)"}},
      {"node-exporter has no GPU memory",
       "metricsSource: {gpuMemory: node-exporter}",
       {"metricsSource.gpuMemory: \"node-exporter\" (expected tidal-agent or dcgm-exporter)"}},
      {"dcgm-exporter has no storage",
       "metricsSource: {storage: dcgm-exporter}",
       {"metricsSource.storage: \"dcgm-exporter\" (expected tidal-agent or node-exporter)"}},
      {"a node label that is not a label name",
       "metricsSource: {dcgmExporter: {nodeLabel: \"host name\"}}",
       {"metricsSource.dcgmExporter.nodeLabel: \"host name\" is not a label name (letters, "
        "digits and '_', not starting with a digit or \"__\")"}},
      {"Prometheus's own labels are not node labels",
       "metricsSource: {nodeExporter: {nodeLabel: __address__}}",
       {"metricsSource.nodeExporter.nodeLabel: \"__address__\" is not a label name (letters, "
        "digits and '_', not starting with a digit or \"__\")"}},
      {"a broken device pattern",
       "metricsSource: {nodeExporter: {devices: \"nvme[0-9+\"}}",
       {"metricsSource.nodeExporter.devices: \"nvme[0-9+\" is not a regular expression: "}},
      {"a look-ahead RE2 does not have",
       "metricsSource: {nodeExporter: {devices: \"(?!sda)sd.\"}}",
       {"metricsSource.nodeExporter.devices: \"(?!\": look-around and back-references are not "
        "RE2 (Prometheus's regular expressions)"}},
      {"a backtick would end the query's raw string",
       "metricsSource: {nodeExporter: {devices: \"sd`a\"}}",
       {"metricsSource.nodeExporter.devices: contains a backtick or a control character"}},
      {"a rate window too short",
       "metricsSource: {nodeExporter: {rateWindow: 500ms}}",
       {"metricsSource.nodeExporter.rateWindow: must be in [1s, 1h]"}},
      {"an unknown NVLink series",
       "metricsSource: {dcgmExporter: {nvlinkSeries: nvml}}",
       {"metricsSource.dcgmExporter.nvlinkSeries: \"nvml\" (expected profiling or "
        "bandwidth-total)"}},
      {"a model table entry",
       "metricsSource: {gpuModels: {\"NVIDIA H100 80GB HBM3\": {topology: fully-linked, "
       "linksPerPair: 18, nvlinkPeakGBps: 450}}}",
       {}},
      {"model table errors",
       "metricsSource: {gpuModels: {H100: {topology: ring, linksPerPair: 0, nvlinkPeakGBps: -1, "
       "peak: 3}}}",
       {"metricsSource.gpuModels.H100.peak: unknown field (expected one of: topology, "
        "linksPerPair, nvlinkPeakGBps)",
        "metricsSource.gpuModels.H100.topology: \"ring\" (expected fully-linked or none)",
        "metricsSource.gpuModels.H100.linksPerPair: must be in [1, 64]",
        "metricsSource.gpuModels.H100.nvlinkPeakGBps: -1 is outside [0, 1e6] (GB/s; 0: not "
        "known)"}},
      {"a typo",
       "metricsSource: {gpumemory: dcgm-exporter}",
       {"metricsSource.gpumemory: unknown field (expected one of: gpuMemory, nvlink, storage, "
        "dcgmExporter, nodeExporter, gpuModels)"}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    ParsePolicyConfig(YAML::Load(tc.yaml), errors);
    ASSERT_EQ(errors.items().size(), tc.want.size()) << errors.Joined();
    for (std::size_t i = 0; i < tc.want.size(); ++i)
      // The regex library's own explanation follows the prefix.
      EXPECT_EQ(errors.items()[i].substr(0, tc.want[i].size()), tc.want[i]);
  }
}

TEST(PolicyConfig, MetricsSourceDefaultsToTheAgentAndRoundTrips) {
  EXPECT_TRUE(DefaultPolicyConfig().metrics_source.AllAgent());
  const PolicyConfig a = LoadPolicyConfig(YAML::Load(R"(
metricsSource:
  gpuMemory: dcgm-exporter
  nvlink: tidal-agent
  storage: node-exporter
  dcgmExporter: {nodeLabel: kubernetes_node, nvlinkSeries: bandwidth-total, bandwidthTotalBytesPerUnit: 1e6}
  nodeExporter: {nodeLabel: node, devices: 'nvme\d+n1|sd[b-z]', rateWindow: 1500ms}
  gpuModels: {"NVIDIA H100 80GB HBM3": {topology: fully-linked, linksPerPair: 18, nvlinkPeakGBps: 450}}
)"));
  const MetricsSourceConfig& m = a.metrics_source;
  EXPECT_FALSE(m.AllAgent());
  EXPECT_EQ(m.gpu_memory, MetricsSourceKind::kDcgmExporter);
  EXPECT_EQ(m.nvlink, MetricsSourceKind::kTidalAgent);
  EXPECT_EQ(m.storage, MetricsSourceKind::kNodeExporter);
  EXPECT_EQ(m.dcgm_node_label, "kubernetes_node");
  EXPECT_EQ(m.dcgm_nvlink_series, DcgmNvlinkSeries::kBandwidthTotal);
  EXPECT_EQ(m.node_exporter_devices, "nvme\\d+n1|sd[b-z]");
  EXPECT_EQ(m.node_exporter_rate_window_ms, 1500);
  ASSERT_EQ(m.gpu_models.count("NVIDIA H100 80GB HBM3"), 1u);
  EXPECT_EQ(m.gpu_models.at("NVIDIA H100 80GB HBM3"), (GpuModelInfo{true, 18, 450}));
  const std::string dumped = DumpPolicyConfig(a);
  const PolicyConfig b = LoadPolicyConfig(YAML::Load(dumped));
  EXPECT_EQ(b.metrics_source.gpu_models, m.gpu_models) << dumped;
  EXPECT_EQ(b.metrics_source.node_exporter_devices, m.node_exporter_devices) << dumped;
  EXPECT_EQ(b.metrics_source.dcgm_bandwidth_total_bytes_per_unit, 1e6) << dumped;
  EXPECT_EQ(DumpPolicyConfig(b), dumped);
}

TEST(PolicyConfig, ShippedExporterConfigLoads) {
  const PolicyConfig c =
      LoadPolicyConfigFile(std::string(TIDAL_SOURCE_DIR) + "/examples/config/exporters.yaml");
  EXPECT_EQ(c.metrics_source.gpu_memory, MetricsSourceKind::kDcgmExporter);
  EXPECT_EQ(c.metrics_source.storage, MetricsSourceKind::kNodeExporter);
  EXPECT_EQ(c.metrics_source.gpu_models.at("NVIDIA H100 80GB HBM3"), (GpuModelInfo{true, 18, 450}));
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
