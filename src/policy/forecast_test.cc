#include "tidal/policy/forecast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tidal {
namespace {

TEST(HoltSeries, KnownAnswers) {
  struct Obs {
    TimeMs t;
    double x;
  };
  struct Case {
    const char* name;
    double alpha, beta;
    std::vector<Obs> samples;
    TimeMs at;
    double want;
  };
  const std::vector<Case> cases = {
      {"no trend from one sample", 0.5, 0.5, {{0, 0.4}}, 60'000, 0.4},
      // By hand: l=0.5, b=2.5e-5/ms after t=10 s; l=1.375, b=5.625e-5/ms after t=20 s.
      {"three samples by hand", 0.5, 0.5, {{0, 0}, {10'000, 1}, {20'000, 2}}, 30'000, 1.9375},
      {"a constant stays constant",
       0.3,
       0.2,
       {{0, 0.7}, {10'000, 0.7}, {20'000, 0.7}},
       90'000,
       0.7},
      // The same Prometheus sample read again changes nothing.
      {"repeated sample ignored",
       0.5,
       0.5,
       {{0, 0}, {10'000, 1}, {10'000, 9}, {20'000, 2}},
       30'000,
       1.9375},
      // After a gap longer than maxGap (120 s) the series restarts at the new sample.
      {"gap restarts", 0.5, 0.5, {{0, 0}, {10'000, 1}, {200'000, 0.2}}, 230'000, 0.2},
      {"past time predicts the level", 0.5, 0.5, {{0, 0}, {10'000, 1}}, 5'000, 0.5},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    HoltSeries s(tc.alpha, tc.beta, 120'000);
    for (const Obs& o : tc.samples) s.Observe(o.t, o.x);
    ASSERT_TRUE(s.Predict(tc.at));
    EXPECT_NEAR(*s.Predict(tc.at), tc.want, 1e-12);
  }
  EXPECT_FALSE(HoltSeries(0.5, 0.5, 1000).Predict(0)) << "nothing before the first sample";
}

TEST(HoltSeries, LearnsALinearRamp) {
  HoltSeries s(0.5, 0.3, 120'000);
  for (int i = 0; i <= 60; ++i) s.Observe(i * 10'000LL, 0.1 + 0.0005 * i);  // +0.05 % per second
  EXPECT_NEAR(*s.Predict(60 * 10'000LL + 30'000), 0.1 + 0.0005 * 63, 1e-6);
}

TEST(LoadForecaster, ClampsAndForgetsSilentNodes) {
  ForecastConfig c;
  c.horizon_ms = 30'000;
  c.alpha = 0.5;
  c.beta = 0.5;
  LoadForecaster f(c);
  f.Observe("n", 0, {0.90, 0.5, 10});
  f.Observe("n", 10'000, {0.95, 0.2, 5});
  f.Observe("n", 20'000, {0.99, 0.0, 1});
  const auto p = f.Predict("n", 20'000);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpu_memory, 1.0) << "a fraction never passes 1";
  EXPECT_EQ(p->nvlink, 0.0) << "nor goes below 0";
  EXPECT_EQ(p->await_ms, 0.0);
  EXPECT_FALSE(f.Predict("other", 20'000));
  EXPECT_FALSE(f.Predict("n", 20'000 + c.max_gap_ms + 1)) << "no extrapolation of a silent node";
}

}  // namespace
}  // namespace tidal
