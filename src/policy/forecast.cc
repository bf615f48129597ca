#include "tidal/policy/forecast.h"

#include <algorithm>

namespace tidal {

void HoltSeries::Observe(TimeMs t_ms, double value) {
  if (samples_ > 0 && t_ms <= last_ms_) return;
  if (samples_ == 0 || t_ms - last_ms_ > max_gap_ms_) {
    samples_ = 1;
    last_ms_ = t_ms;
    level_ = value;
    trend_per_ms_ = 0;
    return;
  }
  const double dt = static_cast<double>(t_ms - last_ms_);
  const double previous = level_;
  level_ = alpha_ * value + (1 - alpha_) * (level_ + trend_per_ms_ * dt);
  trend_per_ms_ = beta_ * (level_ - previous) / dt + (1 - beta_) * trend_per_ms_;
  last_ms_ = t_ms;
  ++samples_;
}

std::optional<double> HoltSeries::Predict(TimeMs at_ms) const {
  if (samples_ == 0) return std::nullopt;
  return level_ + trend_per_ms_ * static_cast<double>(std::max<TimeMs>(0, at_ms - last_ms_));
}

void LoadForecaster::Observe(const std::string& node, TimeMs sample_ms, const LoadVector& load) {
  auto it = series_.find(node);
  if (it == series_.end()) {
    const HoltSeries fresh(config_.alpha, config_.beta, config_.max_gap_ms);
    it = series_.emplace(node, NodeSeries{fresh, fresh, fresh}).first;
  }
  it->second.memory.Observe(sample_ms, load.gpu_memory);
  it->second.nvlink.Observe(sample_ms, load.nvlink);
  it->second.await.Observe(sample_ms, load.await_ms);
}

std::optional<LoadVector> LoadForecaster::Predict(const std::string& node, TimeMs now_ms) const {
  const auto it = series_.find(node);
  if (it == series_.end()) return std::nullopt;
  const NodeSeries& s = it->second;
  // A node that stopped reporting has no trend worth extrapolating.
  if (now_ms - s.memory.last_ms() > config_.max_gap_ms) return std::nullopt;
  const TimeMs at = now_ms + config_.horizon_ms;
  LoadVector out;
  out.gpu_memory = std::clamp(*s.memory.Predict(at), 0.0, 1.0);
  out.nvlink = std::clamp(*s.nvlink.Predict(at), 0.0, 1.0);
  out.await_ms = std::max(0.0, *s.await.Predict(at));
  return out;
}

}  // namespace tidal
