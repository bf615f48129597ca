#pragma once
// The one-method interface every collector implements, and the sources collectors
// read through (files, time), injected so that tests use fakes.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "tidal/agent/metrics.h"
#include "tidal/core/status.h"

namespace tidal::agent {

// Monotonic time for intervals and durations. tidal::Clock is wall-clock
// milliseconds, too coarse and not monotonic for rates.
class MonotonicClock {
 public:
  virtual ~MonotonicClock() = default;
  virtual std::int64_t NowNs() const = 0;
};

class SteadyClock final : public MonotonicClock {
 public:
  std::int64_t NowNs() const override;
};

class ManualMonotonicClock final : public MonotonicClock {
 public:
  std::int64_t NowNs() const override { return now_ns_; }
  void AdvanceMs(std::int64_t ms) { now_ns_ += ms * 1'000'000; }
  void AdvanceNs(std::int64_t ns) { now_ns_ += ns; }

 private:
  std::int64_t now_ns_ = 1'000'000'000;
};

// Reads a whole file; a missing or unreadable file is a non-OK Status naming the path.
using FileReader = std::function<Status(const std::string& path, std::string* out)>;
FileReader RealFileReader();

class Collector {
 public:
  virtual ~Collector() = default;
  // Short name for the `collector` label: "disk", "gpu", "nvlink_competition".
  virtual std::string_view Name() const = 0;
  // Adds this pass's samples to `out`. A non-OK Status marks the collector down
  // (ai_collector_up 0 with the reason); whatever it added is still exported.
  virtual Status Collect(MetricSet& out) = 0;
};

}  // namespace tidal::agent
