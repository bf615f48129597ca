#include "tidal/metrics/golden.h"

#include <cmath>

namespace tidal {

double PopulationVariance(std::span<const double> values) {
  if (values.empty()) return 0;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  double var = 0;
  for (double v : values) var += (v - mean) * (v - mean);
  return var / static_cast<double>(values.size());
}

double PopulationStdDev(std::span<const double> values) {
  return std::sqrt(PopulationVariance(values));
}

}  // namespace tidal
