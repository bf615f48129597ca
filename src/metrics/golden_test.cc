#include "tidal/metrics/golden.h"

#include <gtest/gtest.h>

#include <vector>

namespace tidal {
namespace {

TEST(Golden, LscsIsThePopulationStdDevAcrossNodes) {
  struct Case {
    const char* name;
    std::vector<double> values;
    double want;
  };
  const Case cases[] = {
      {"the reference fixture: node averages 0.5 and 0.2 give 0.15", {0.5, 0.2}, 0.15},
      {"a balanced cluster is 0", {0.6, 0.6, 0.6}, 0},
      {"one node is 0", {0.9}, 0},
      {"no nodes is 0", {}, 0},
      {"the brief's cluster: three at 95 %, five at 12-28 %",
       {0.95, 0.96, 0.97, 0.12, 0.18, 0.2, 0.25, 0.28},
       0.3677},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_NEAR(Lscs(tc.values), tc.want, 1e-4);
  }
}

TEST(Golden, MigrationRateAndNvlinkVariance) {
  EXPECT_DOUBLE_EQ(MigrationRate(1, 200), 0.005);
  EXPECT_DOUBLE_EQ(MigrationRate(3, 0), 0);
  const std::vector<double> util{0.1, 0.3};
  EXPECT_NEAR(NvlinkVariance(util), 0.01, 1e-12);
}

}  // namespace
}  // namespace tidal
