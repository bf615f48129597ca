#pragma once
// The metrics snapshot: what the agents' series in Prometheus say about each
// node, built off the request path by a refresher and then read-only.
//
// Joining is on the `node` label (its name configurable). A value that is NaN,
// infinite or negative, or two series for the same GPU that disagree, make the
// node's reading unusable rather than guessed: the node is then *unknown*, and a
// failed or partial reading is never taken as zero load.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/metrics/prometheus_client.h"

namespace tidal {

struct NodeMetrics {
  std::vector<Gpu> gpus;        // by index
  double storage_await_ms = 0;  // worst device
  double nvlink_competition = 0;
  TimeMs sample_time_ms = 0;  // newest agent sample seen for the node
  bool usable = true;         // false: see problems
  std::vector<std::string> problems;
};

struct MetricsSnapshot {
  TimeMs fetched_at_ms = 0;
  std::unordered_map<std::string, NodeMetrics> nodes;  // by node name
  std::vector<std::string> problems;                   // e.g. series without a node label
  std::size_t series = 0;                              // series read
};

// The agent families the snapshot is built from, as one selector.
std::string AgentSeriesSelector();
// Per node, the newest sample time of the agent's series.
std::string SampleTimeQuery(const std::string& node_label);

// Builds a snapshot from the result of AgentSeriesSelector() and of
// SampleTimeQuery() (pure: tested on hand-written results).
MetricsSnapshot BuildSnapshot(const prom::QueryResult& series,
                              const prom::QueryResult& sample_times, const std::string& node_label,
                              TimeMs fetched_at_ms);

// Where snapshots come from: Prometheus in production, a fake in tests.
class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  // Blocking; bounded by the source's own timeout. An error leaves *out untouched.
  virtual Status Fetch(TimeMs now_ms, MetricsSnapshot* out) = 0;
  virtual std::string Describe() const = 0;
};

class PrometheusSource final : public MetricsSource {
 public:
  PrometheusSource(std::unique_ptr<prom::PrometheusClient> client, std::string node_label);
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override;
  std::string Describe() const override { return client_->url(); }

 private:
  std::unique_ptr<prom::PrometheusClient> client_;
  std::string node_label_;
};

}  // namespace tidal
