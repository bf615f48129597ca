#include "policy/plugins/loadaware/loadaware.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

struct Case {
  const char* name;
  bool margin;  // the default safety margin (0.03) or none
  double memory;
  double competition;
  double await_ms;
  bool nvlink_pod;
  bool want_fit;
  const char* want_reason;  // substring, when rejected
  double want_score;        // when it fits
};

// docs/design.md#filter-and-score (the name keeps the section number the original
// specification gave it).
TEST(LoadAware, FilterAndScoreFollowDesignSection4) {
  const Case cases[] = {
      {"worked case: 78% memory, no margin, scores 73.3", false, 0.78, 0, 0, false, true, "",
       73.333333},
      {"worked case: 88% memory is rejected with a readable reason", true, 0.88, 0, 0, false, false,
       "GPU memory 88% over reject threshold 82%", 0},
      {"below the warning band everything scores 100", true, 0.50, 0, 0, false, true, "", 100},
      {"the warning level itself scores 100", true, 0.70, 0, 0, false, true, "", 100},
      {"with the margin the band is 0.70 to 0.82", true, 0.76, 0, 0, false, true, "", 75},
      {"exactly at the effective reject threshold still fits", true, 0.82, 0, 0, false, true, "",
       50},
      {"just over the effective reject threshold is rejected", true, 0.83, 0, 0, false, false,
       "over reject threshold 82%", 0},
      {"no margin: 84% fits", false, 0.84, 0, 0, false, true, "", 53.333333},
      {"NVLink load does not reject a pod that does not use NVLink", true, 0.1, 0.9, 0, false, true,
       "", 100},
      {"NVLink load rejects a pod that uses NVLink", true, 0.1, 0.9, 0, true, false,
       "NVLink load 0.90 over reject threshold 0.57", 0},
      {"NVLink worked case: index 0.25 is below the warning level", true, 0.1, 0.25, 0, true, true,
       "", 100},
      {"NVLink in the band costs 0.3 of its position", false, 0.1, 0.45, 0, true, true, "", 85},
      {"await worked case: 42.83 ms is in the band", true, 0.1, 0, 42.83, false, true, "",
       97.971326},
      {"await over 67.9 ms is rejected", true, 0.1, 0, 68, false, false,
       "storage await 68.0 ms over reject threshold 67.9 ms", 0},
      {"no margin: 70 ms await is the reject threshold and fits", false, 0.1, 0, 70, false, true,
       "", 80},
      {"all three dimensions at the top of their band", false, 0.85, 0.6, 70, true, true, "", 0},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PolicyConfig config = tc.margin ? DefaultPolicyConfig() : NoMarginConfig();
    PodBuilder pb;
    pb.Gpus(1);
    if (tc.nvlink_pod) pb.NvlinkRequired();
    const PodDemand pod = pb.Build();
    const CycleState cycle = Cycle(config, pod);
    const NodeState node = NodeBuilder("n")
                               .Gpus(4, 24 * kGi)
                               .MemoryFraction(tc.memory)
                               .Competition(tc.competition)
                               .Await(tc.await_ms)
                               .Build();
    LoadAware plugin{LoadAwareArgs{}};
    NodeScratch scratch;
    const Status s = plugin.FilterOne(cycle, node, scratch);
    EXPECT_EQ(s.ok(), tc.want_fit) << s.reason();
    if (!tc.want_fit) {
      EXPECT_EQ(s.code(), Code::kUnfit);
      EXPECT_NE(s.reason().find(tc.want_reason), std::string::npos) << s.reason();
    } else {
      EXPECT_NEAR(plugin.ScoreOne(cycle, node, scratch), tc.want_score, 1e-4);
    }
  }
}

TEST(LoadAware, UnknownNodeIsSchedulableAtAPenalty) {
  const PolicyConfig config = DefaultPolicyConfig();
  const PodDemand pod = PodBuilder().Gpus(1).Build();
  const CycleState cycle = Cycle(config, pod);
  // Its last (stale) reading says 99 %: an unknown node is neither full nor idle.
  const NodeState node = NodeBuilder("n").Gpus(4, 24 * kGi).MemoryFraction(0.99).Unknown().Build();
  LoadAware plugin{LoadAwareArgs{}};
  NodeScratch scratch;
  EXPECT_TRUE(plugin.FilterOne(cycle, node, scratch).ok());
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, scratch), 50);
}

// loadForecast: the score reads measured load + trend; the filter reads the
// measurement alone, so a falling forecast never admits a node over reject.
TEST(LoadAware, ScoreReadsTheForecastFilterDoesNot) {
  struct TrendCase {
    const char* name;
    double memory, trend;
    bool want_fit;
    double want_score;
  };
  const TrendCase cases[] = {
      {"rising into the band scores as where it is going", 0.70, +0.06, true, 75},
      {"falling out of the band scores 100", 0.76, -0.10, true, 100},
      {"no trend: the measurement", 0.76, 0, true, 75},
      {"a falling forecast does not admit a node over reject", 0.90, -0.30, false, 0},
      {"a forecast past the reject threshold costs the whole memory weight", 0.80, +0.10, true, 50},
  };
  const PolicyConfig config = DefaultPolicyConfig();
  const PodDemand pod = PodBuilder().Gpus(1).Build();
  const CycleState cycle = Cycle(config, pod);
  for (const TrendCase& tc : cases) {
    SCOPED_TRACE(tc.name);
    NodeState node = NodeBuilder("n").Gpus(4, 24 * kGi).MemoryFraction(tc.memory).Build();
    node.load_trend.gpu_memory = tc.trend;
    node.has_load_trend = true;
    LoadAware plugin{LoadAwareArgs{}};
    NodeScratch scratch;
    EXPECT_EQ(plugin.FilterOne(cycle, node, scratch).ok(), tc.want_fit);
    if (tc.want_fit) {
      EXPECT_NEAR(plugin.ScoreOne(cycle, node, scratch), tc.want_score, 1e-6);
    }
  }
}

TEST(LoadAwareArgs, ValidationNamesEveryBadField) {
  struct ArgsCase {
    const char* name;
    const char* yaml;
    std::vector<std::string> want;
  };
  const ArgsCase cases[] = {
      {"defaults are valid", "{}", {}},
      {"weights must sum to 1",
       "{weights: {gpuMemory: 0.5, nvlink: 0.5, io: 0.5}}",
       {"plugins.loadaware.args.weights: weights sum to 1.5, expected 1"}},
      {"a negative weight",
       "{weights: {gpuMemory: 1.2, nvlink: -0.2, io: 0}}",
       {"plugins.loadaware.args.weights.gpuMemory: 1.2 is outside [0, 1]",
        "plugins.loadaware.args.weights.nvlink: -0.2 is outside [0, 1]"}},
      {"a typo is an error",
       "{wieghts: {}}",
       {"plugins.loadaware.args.wieghts: unknown field (expected one of: weights, "
        "unknownNodeScore)"}},
      {"unknown node score out of range",
       "{unknownNodeScore: 120}",
       {"plugins.loadaware.args.unknownNodeScore: 120 is outside [0, 100]"}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    auto plugin = NewLoadAware(YAML::Load(tc.yaml), "plugins.loadaware.args", errors);
    EXPECT_EQ(errors.items(), tc.want);
    EXPECT_EQ(plugin == nullptr, !tc.want.empty());
  }
}

// The reject reasons print their numbers exactly as fmt's "{:.Nf}" does, ties
// (half to even), large values and non-finite ones included: a table of edge
// values, then a seeded sweep.
TEST(LoadAware, ReasonNumbersMatchFmt) {
  const PolicyConfig config = NoMarginConfig();
  const PodDemand pod = PodBuilder().Gpus(1).NvlinkRequired().Build();
  const CycleState cycle = Cycle(config, pod);
  const LoadAware plugin{LoadAwareArgs{}};
  const NodeState base = NodeBuilder("n").Gpus(1, 24 * kGi).Build();
  const double inf = std::numeric_limits<double>::infinity();
  enum Dim { kMemory, kNvlink, kAwait };
  auto reason = [&](Dim dim, double value) {
    NodeState node = base;
    (dim == kMemory   ? node.load.gpu_memory
     : dim == kNvlink ? node.load.nvlink
                      : node.load.await_ms) = value;
    NodeScratch scratch;
    return plugin.FilterOne(cycle, node, scratch).reason();
  };
  auto want = [&](Dim dim, double value) {
    const EffectiveThresholds& t = cycle.thresholds;
    switch (dim) {
      case kMemory:
        return fmt::format("GPU memory {:.0f}% over reject threshold {:.0f}%",
                           std::floor(value * 100 + 0.5),
                           std::floor(t.gpu_memory.reject * 100 + 0.5));
      case kNvlink:
        return fmt::format("NVLink load {:.2f} over reject threshold {:.2f}", value,
                           t.nvlink.reject);
      case kAwait:
        break;
    }
    return fmt::format("storage await {:.1f} ms over reject threshold {:.1f} ms", value,
                       t.await_ms.reject);
  };
  struct Edge {
    Dim dim;
    double value;
  };
  const Edge edges[] = {
      {kMemory, 0.995},  {kMemory, 0.865}, {kMemory, 1.0},   {kMemory, 12.345},    {kMemory, 1e200},
      {kMemory, inf},    {kNvlink, 0.625}, {kNvlink, 0.875}, {kNvlink, 0.605},     {kNvlink, 0.995},
      {kNvlink, 1234.5}, {kNvlink, 1e13},  {kNvlink, 1e300}, {kNvlink, inf},       {kAwait, 70.25},
      {kAwait, 70.75},   {kAwait, 70.05},  {kAwait, 99.95},  {kAwait, 9.99e12},    {kAwait, 1e13},
      {kAwait, 4.5e15},  {kAwait, 1e300},  {kAwait, inf},    {kAwait, 1e6 + 0.25},
  };
  for (const Edge& e : edges) EXPECT_EQ(reason(e.dim, e.value), want(e.dim, e.value)) << e.value;
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> frac(0.85, 1.5), nvl(0.6, 50), await(70, 1e7);
  for (int i = 0; i < 20000; ++i) {
    const double m = frac(rng), l = nvl(rng), a = await(rng);
    // Exact ties too: multiples of 1/8 (two decimals) and 1/4 (one decimal).
    const double lt = static_cast<double>(5 + rng() % 4000) / 8,
                 at = static_cast<double>(281 + rng() % 4000) / 4;
    ASSERT_EQ(reason(kMemory, m), want(kMemory, m)) << m;
    ASSERT_EQ(reason(kNvlink, l), want(kNvlink, l)) << l;
    ASSERT_EQ(reason(kNvlink, lt), want(kNvlink, lt)) << lt;
    ASSERT_EQ(reason(kAwait, a), want(kAwait, a)) << a;
    ASSERT_EQ(reason(kAwait, at), want(kAwait, at)) << at;
  }
}

}  // namespace
}  // namespace tidal
