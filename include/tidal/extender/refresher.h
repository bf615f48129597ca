#pragma once
// The background refresher (DESIGN §6): every metricCacheTTL it fetches a
// snapshot from the metrics source (bounded by the source's timeout), builds a
// new view and publishes it. A failed fetch keeps the last good snapshot in the
// view (nodes then age into *unknown*) and records the failure, which is what
// the fallback stages are computed from. Requests never wait on it.
#include <spdlog/logger.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "tidal/core/clock.h"
#include "tidal/extender/inflight.h"
#include "tidal/extender/peak_tracker.h"
#include "tidal/extender/view.h"
#include "tidal/metrics/snapshot.h"
#include "tidal/policy/forecast.h"
#include "tidal/policy/memory_learner.h"

namespace tidal::extender {

class Refresher {
 public:
  Refresher(MetricsSource& source, ViewStore& store, NodeCatalog& catalog, const Clock& clock,
            TimeMs interval_ms, std::shared_ptr<spdlog::logger> log);
  ~Refresher();

  // In-flight reservations to expire against each snapshot and to show in the
  // view (before Start()).
  void AttachReservations(InFlight* inflight) { inflight_ = inflight; }
  // The load forecast (loadForecast): fed each node's new samples, read into
  // every view it publishes (before Start()).
  void AttachForecaster(LoadForecaster* forecaster) { forecaster_ = forecaster; }
  // memoryLearning: each successful snapshot goes to the peak tracker, and what
  // the learner learned is saved to `file` (if not empty) from this thread.
  void AttachLearning(PodPeakTracker* peaks, MemoryLearner* learner, std::string file) {
    peaks_ = peaks;
    learner_ = learner;
    learned_file_ = std::move(file);
  }
  // A successful fetch longer than this is logged as slow once per episode (0: never);
  // a source that nears its timeout is about to fail (before Start()).
  void WarnSlowerThan(TimeMs ms) { slow_after_ms_ = ms; }
  // One attempt, published before it returns (tests drive this with a ManualClock).
  void RefreshOnce();
  // Publishes a new view if the catalog (nodes from the API server) or the
  // reservations have changed since the current one; cheap when only
  // reservations have. Bind calls it so the next filter sees its placement.
  void Republish();
  void Start();
  void Stop();

 private:
  MetricsSource& source_;
  ViewStore& store_;
  NodeCatalog& catalog_;
  const Clock& clock_;
  TimeMs interval_ms_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex fetch_mu_;    // serialises RefreshOnce, held across the fetch
  std::mutex publish_mu_;  // serialises building and publishing a view; never held across I/O
  std::mutex mu_;          // guards stop_
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::uint64_t generation_ = 0;
  InFlight* inflight_ = nullptr;
  LoadForecaster* forecaster_ = nullptr;
  PodPeakTracker* peaks_ = nullptr;
  MemoryLearner* learner_ = nullptr;
  std::string learned_file_;
  TimeMs slow_after_ms_ = 0;
  void ApplyReservations(ClusterView* next);
  void ApplyForecast(std::unordered_map<std::string, NodeState>* nodes, TimeMs now);
};

}  // namespace tidal::extender
