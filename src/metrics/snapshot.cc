#include "tidal/metrics/snapshot.h"

#include <fmt/format.h>

#include "metrics/readings.h"

namespace tidal {

// The families SourcedSeriesQuery selects when the agent gives every dimension.
std::string AgentSeriesSelector() { return SourcedSeriesQuery(MetricsSourceConfig{}, ""); }

std::string SampleTimeQuery(const std::string& node_label) {
  return fmt::format("max by ({}) (timestamp({}))", node_label, readings::kAgentUp);
}

MetricsSnapshot BuildSnapshot(const prom::QueryResult& series,
                              const prom::QueryResult& sample_times, const std::string& node_label,
                              TimeMs fetched_at_ms) {
  return BuildSourcedSnapshot(series, sample_times, MetricsSourceConfig{}, node_label,
                              fetched_at_ms);
}

PrometheusSource::PrometheusSource(std::unique_ptr<prom::PrometheusClient> client,
                                   std::string node_label, MetricsSourceConfig sources)
    : client_(std::move(client)),
      node_label_(std::move(node_label)),
      sources_(std::move(sources)) {}

std::string PrometheusSource::Describe() const {
  if (sources_.AllAgent()) return client_->url();
  return fmt::format("{} (gpuMemory: {}, nvlink: {}, storage: {})", client_->url(),
                     MetricsSourceName(sources_.gpu_memory), MetricsSourceName(sources_.nvlink),
                     MetricsSourceName(sources_.storage));
}

Status PrometheusSource::Fetch(TimeMs now_ms, MetricsSnapshot* out) {
  prom::QueryResult series, times;
  const double at = static_cast<double>(now_ms) / 1000.0;
  const bool agent = sources_.AllAgent();
  Status s = client_->Query(
      agent ? AgentSeriesSelector() : SourcedSeriesQuery(sources_, node_label_), at, &series);
  if (!s.ok()) return s;
  s = client_->Query(
      agent ? SampleTimeQuery(node_label_) : SourcedSampleTimeQuery(sources_, node_label_), at,
      &times);
  if (!s.ok()) return s;
  if (series.type != prom::ResultType::kVector || times.type != prom::ResultType::kVector)
    return Status::Error("expected vector results from " + client_->url());
  *out = BuildSourcedSnapshot(series, times, sources_, node_label_, now_ms);
  return Status::Ok();
}

}  // namespace tidal
