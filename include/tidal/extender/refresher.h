#pragma once
// The background refresher (docs/design.md#freshness): every metricCacheTTL it fetches a
// snapshot from the metrics source (bounded by the source's timeout), builds a
// new view and publishes it. A failed fetch keeps the last good snapshot in the
// view (nodes then age into *unknown*) and records the failure, which is what
// the fallback stages are computed from. Requests never wait on it.
#include <spdlog/logger.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

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
  // Called with every node set the refresher builds (a new snapshot or a changed
  // catalog), on its thread, before the view is published (before Start()): the
  // learned GPU workload is weighed by scarcity over it.
  void OnNodesBuilt(std::function<void(const std::unordered_map<std::string, NodeState>&)> f) {
    nodes_built_ = std::move(f);
  }
  // A successful fetch longer than this is logged as slow once per episode (0: never);
  // a source that nears its timeout is about to fail (before Start()).
  void WarnSlowerThan(TimeMs ms) { slow_after_ms_ = ms; }
  // One attempt, published before it returns (tests drive this with a ManualClock).
  void RefreshOnce();
  // Publishes a new view if the catalog (nodes from the API server) or the
  // reservations have changed since the current one (the refresher's thread
  // calls it between fetches). Every node is built again when the catalog has
  // changed, outside the publish lock.
  void Republish();
  // Publishes the reservations made since the current view, against its nodes:
  // only the nodes whose reservations changed are made again. Bind calls it so
  // that the next filter sees its placement; its cost does not grow with the
  // cluster, and it waits on no node build.
  void PublishReservations();
  void Start();
  void Stop();

 private:
  MetricsSource& source_;
  ViewStore& store_;
  NodeCatalog& catalog_;
  const Clock& clock_;
  TimeMs interval_ms_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex build_mu_;  // serialises the builders (RefreshOnce, Republish), held across the fetch
  std::mutex publish_mu_;  // serialises publishing; never held across I/O or a build of every node
  std::mutex mu_;          // guards stop_
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::uint64_t generation_ = 0;
  InFlight* inflight_ = nullptr;
  LoadForecaster* forecaster_ = nullptr;
  std::function<void(const std::unordered_map<std::string, NodeState>&)> nodes_built_;
  PodPeakTracker* peaks_ = nullptr;
  MemoryLearner* learner_ = nullptr;
  std::string learned_file_;
  TimeMs slow_after_ms_ = 0;
  // Publishes `next` (new nodes) with the reservations overlaid: the whole overlay
  // is made before the publish lock, what changed meanwhile under it.
  void PublishNodes(std::shared_ptr<ClusterView> next);
  void LogFetched(const MetricsSnapshot& snapshot, const MetricsSnapshot* before, SourceHealth* h);
  void UseSnapshot(std::shared_ptr<MetricsSnapshot> snapshot, TimeMs now, ClusterView* next);
  // The view's nodes from its snapshot and the catalog as it is now; `observe`:
  // the forecast learns from them (a new snapshot).
  void RebuildNodes(TimeMs now, ClusterView* next, bool observe = false);
  // Brings `next`'s overlay (made against its nodes) up to the reservations' generation.
  void CatchUpReservations(ClusterView* next);
  void ApplyForecast(std::unordered_map<std::string, NodeState>* nodes, TimeMs now);
};

}  // namespace tidal::extender
