#pragma once
// The three golden metrics (docs/design.md#golden-metrics), computed once for everyone: the
// simulator's report and `tidal health` both call these.
#include <span>

namespace tidal {

// Population standard deviation (divides by N), as PromQL's stddev().
double PopulationStdDev(std::span<const double> values);
// Population variance, as PromQL's stdvar().
double PopulationVariance(std::span<const double> values);

// LSCS: std-dev across nodes of each node's GPU-memory utilisation (0..1,
// already averaged over 5 minutes by the caller).
inline double Lscs(std::span<const double> node_memory_utilisation) {
  return PopulationStdDev(node_memory_utilisation);
}

// Task migration rate: evicted or OOM-killed AI pods over AI pods started.
inline double MigrationRate(double evicted_or_oom_killed, double started) {
  return started > 0 ? evicted_or_oom_killed / started : 0;
}

// NVLink variance: variance across one node's GPUs of NVLink bandwidth utilisation.
inline double NvlinkVariance(std::span<const double> gpu_nvlink_utilisation) {
  return PopulationVariance(gpu_nvlink_utilisation);
}

inline constexpr double kLscsHealthy = 0.15;
inline constexpr double kMigrationRateHealthy = 0.005;
inline constexpr double kNvlinkVarianceHealthy = 0.02;

}  // namespace tidal
