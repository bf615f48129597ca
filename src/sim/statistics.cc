#include "sim/statistics.h"

#include <algorithm>

#include "tidal/metrics/golden.h"

namespace tidal::sim {

namespace {

// From the end of the burst while work is still queued: when LSCS went below the
// healthy level for good, after the burst's end; -1: never.
double LscsSettleS(const std::vector<TimePoint>& series, double burst_end) {
  double busy_end = burst_end;
  for (const auto& p : series)
    if (p.pending > 0) busy_end = std::max(busy_end, p.t_s);
  double settle_at = -1;
  for (const auto& p : series) {
    if (p.t_s < burst_end || p.t_s > busy_end) continue;
    if (p.lscs <= kLscsHealthy) {
      if (settle_at < 0) settle_at = p.t_s;
    } else {
      settle_at = -1;
    }
  }
  return settle_at < 0 ? -1 : settle_at - burst_end;
}

}  // namespace

double NodeMemoryStats::Add(double u, std::size_t size) {
  window.push_back(u);
  sum += u;
  ++samples;
  peak = std::max(peak, u);
  while (window.size() > size) window.pop_front();
  double avg = 0;
  for (double v : window) avg += v;
  return avg / static_cast<double>(window.size());
}

RunStatistics::RunStatistics(const RuntimeModel& model, std::size_t lscs_window)
    : model_(model), lscs_window_(lscs_window), memory_(model.nodes().size()) {}

void RunStatistics::Sample(TimeMs now, int pending, int running) {
  TimePoint p;
  p.t_s = static_cast<double>(now) / 1000.0;
  std::vector<double> averages;
  for (std::size_t n = 0; n < model_.nodes().size(); ++n) {
    const NodeRt& node = model_.nodes()[n];
    Bytes sum = 0;
    for (Bytes b : model_.UsedMemory(n, now)) sum += b;
    const double cap = static_cast<double>(node.spec->gpu_memory) * node.spec->gpu_count;
    const double u = cap > 0 ? static_cast<double>(sum) / cap : 0;
    p.node_memory.push_back(u);
    averages.push_back(memory_[n].Add(u, lscs_window_));
    nvlink_variance_max_ = std::max(nvlink_variance_max_, NvlinkVariance(node.nvlink_util));
  }
  p.lscs = Lscs(averages);
  p.pending = pending;
  p.running = running;
  series_.push_back(std::move(p));
}

void RunStatistics::ObserveGpuUsage(double usage) {
  max_overcommit_ = std::max(max_overcommit_, usage);
}

void RunStatistics::ObservePodsPerGpu(int pods) {
  max_pods_per_gpu_ = std::max(max_pods_per_gpu_, pods);
}

void RunStatistics::Fill(TimeMs last_arrival_ms, PolicyResult* r) {
  r->nvlink_variance_max = nvlink_variance_max_;
  r->max_gpu_overcommit = max_overcommit_;
  r->max_pods_per_gpu = max_pods_per_gpu_;
  for (std::size_t k = 0; k < model_.nodes().size(); ++k) {
    const std::string& name = model_.nodes()[k].spec->name;
    r->gpu_mem_util_peak[name] = memory_[k].peak;
    r->gpu_mem_util_mean[name] = memory_[k].samples ? memory_[k].sum / memory_[k].samples : 0;
  }
  for (const auto& p : series_) r->lscs_max = std::max(r->lscs_max, p.lscs);
  r->lscs_settle_s = LscsSettleS(series_, static_cast<double>(last_arrival_ms) / 1000.0);
  r->series = std::move(series_);
}

}  // namespace tidal::sim
