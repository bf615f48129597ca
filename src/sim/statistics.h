#pragma once
// The simulator's statistics (docs/simulator.md, "Report"): every stats interval
// a sample of the true state (each node's GPU-memory utilisation, LSCS over the
// nodes' window averages, the queue), and the run's maxima; at the end, what the
// report shows of them.
#include <cstddef>
#include <deque>
#include <vector>

#include "sim/model.h"
#include "tidal/sim/simulator.h"

namespace tidal::sim {

// Per node, its true GPU-memory utilisation over the run: the LSCS window, the
// mean and the peak.
struct NodeMemoryStats {
  std::deque<double> window;
  double sum = 0;
  int samples = 0;
  double peak = 0;

  // Adds a sample; returns the average over the last `size` samples.
  double Add(double u, std::size_t size);
};

class RunStatistics {
 public:
  // LSCS averages each node over its last `lscs_window` samples.
  RunStatistics(const RuntimeModel& model, std::size_t lscs_window);

  void Sample(TimeMs now, int pending, int running);
  // A GPU's real memory over its capacity, seen by the runtime model.
  void ObserveGpuUsage(double usage);
  void ObservePodsPerGpu(int pods);

  // Fills the result's statistics: LSCS maximum and settle time (from the last
  // arrival), NVLink variance, over-commit, pods per GPU, per-node memory, the series.
  void Fill(TimeMs last_arrival_ms, PolicyResult* r);

 private:
  const RuntimeModel& model_;
  std::size_t lscs_window_;
  std::vector<NodeMemoryStats> memory_;
  std::vector<TimePoint> series_;
  double nvlink_variance_max_ = 0, max_overcommit_ = 0;
  int max_pods_per_gpu_ = 0;
};

}  // namespace tidal::sim
