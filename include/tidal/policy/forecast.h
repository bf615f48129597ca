#pragma once
// Short-horizon forecasts of a node's load (docs/design.md#prediction: where
// load is going). Holt's linear trend on irregularly spaced samples: the trend is a rate
// per millisecond, so a late or missed sample does not distort it.
#include <map>
#include <optional>
#include <string>

#include "tidal/core/types.h"
#include "tidal/policy/config.h"

namespace tidal {

class HoltSeries {
 public:
  HoltSeries(double alpha, double beta, TimeMs max_gap_ms)
      : alpha_(alpha), beta_(beta), max_gap_ms_(max_gap_ms) {}
  // A sample at `t_ms`. One not newer than the last is ignored (the same
  // Prometheus sample is read on every refresh until the agent's next one); one
  // after a gap longer than max_gap restarts the series.
  void Observe(TimeMs t_ms, double value);
  // Level plus trend × (at − last sample). Empty before the first sample.
  std::optional<double> Predict(TimeMs at_ms) const;
  int samples() const { return samples_; }
  TimeMs last_ms() const { return last_ms_; }

 private:
  double alpha_, beta_;
  TimeMs max_gap_ms_;
  int samples_ = 0;
  TimeMs last_ms_ = 0;
  double level_ = 0;
  double trend_per_ms_ = 0;
};

// One HoltSeries per node and load dimension.
class LoadForecaster {
 public:
  explicit LoadForecaster(ForecastConfig config) : config_(config) {}
  void Observe(const std::string& node, TimeMs sample_ms, const LoadVector& load);
  // The load expected at `now_ms + horizon`, clamped to each dimension's range
  // (fractions to [0, 1], await to >= 0). Empty for a node never observed or
  // whose last sample is older than max_gap.
  std::optional<LoadVector> Predict(const std::string& node, TimeMs now_ms) const;
  void Forget(const std::string& node) { series_.erase(node); }
  std::size_t size() const { return series_.size(); }
  const ForecastConfig& config() const { return config_; }

 private:
  struct NodeSeries {
    HoltSeries memory, nvlink, await;
  };
  ForecastConfig config_;
  std::map<std::string, NodeSeries> series_;
};

}  // namespace tidal
