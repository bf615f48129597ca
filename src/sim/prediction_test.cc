#include "tidal/sim/prediction.h"

#include <gtest/gtest.h>

namespace tidal::sim {
namespace {

constexpr double kGi = 1024.0 * 1024 * 1024;

traces::PodUsage Series(const std::string& name, double t0, std::vector<double> gib) {
  traces::PodUsage p;
  p.pod = name;
  for (std::size_t i = 0; i < gib.size(); ++i)
    p.memory.push_back({t0 + 60.0 * static_cast<double>(i), gib[i] * kGi});
  return p;
}

TEST(Prediction, ForecastErrorsByHand) {
  PolicyConfig c;
  c.load_forecast.alpha = 0.5;
  c.load_forecast.beta = 0.5;
  // 10, 20, 30 GiB a minute apart. Last sample: |10−20|/20 and |20−30|/30.
  // Holt: at t=60 it predicts 10 (no trend yet); at t=120 it predicts
  // l + b·60 s with l = 15, b = 2.5/60 GiB/s: 17.5 GiB.
  const auto r = RunPrediction({Series("a", 0, {10, 20, 30})}, c);
  EXPECT_EQ(r.points, 2);
  EXPECT_DOUBLE_EQ(r.median_step_s, 60);
  EXPECT_NEAR(r.mape_last_pct, 100 * (10.0 / 20 + 10.0 / 30) / 2, 1e-9);
  EXPECT_NEAR(r.mape_holt_pct, 100 * (10.0 / 20 + 12.5 / 30) / 2, 1e-9);
}

TEST(Prediction, LearnedEstimateFromEarlierPeaks) {
  PolicyConfig c;
  c.memory_learning.quantile = 1.0;
  c.memory_learning.min_samples = 2;
  c.memory_learning.headroom = 0;
  // Peaks 20, 30, 24, 28 GiB in order of first sample. The rule says 8 GiB.
  // Pods 1 and 2 are cold (rule); pod 3 gets max(20, 30) = 30; pod 4 gets 30.
  const auto r = RunPrediction({Series("p3", 120, {24}), Series("p1", 0, {10, 20}),
                                Series("p2", 60, {30}), Series("p4", 180, {28, 1})},
                               c);
  EXPECT_EQ(r.estimated, 4);
  EXPECT_EQ(r.cold, 2);
  EXPECT_EQ(r.rule_bytes, Bytes{8} << 30);
  const double rule = 100 * (12.0 / 20 + 22.0 / 30 + 16.0 / 24 + 20.0 / 28) / 4;
  EXPECT_NEAR(r.mape_rule_pct, rule, 1e-9);
  EXPECT_NEAR(r.mape_learned_pct, 100 * (12.0 / 20 + 22.0 / 30 + 6.0 / 24 + 2.0 / 28) / 4, 1e-9);
  EXPECT_DOUBLE_EQ(r.under_rule_pct, 100);
  EXPECT_DOUBLE_EQ(r.under_learned_pct, 50) << "only the two cold pods are under-estimated";
}

}  // namespace
}  // namespace tidal::sim
