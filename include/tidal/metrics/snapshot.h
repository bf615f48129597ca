#pragma once
// The metrics snapshot: what the agents' series in Prometheus say about each
// node, built off the request path by a refresher and then read-only.
//
// Joining is on the `node` label (its name configurable). A value that is NaN,
// infinite or negative, or two series for the same GPU that disagree, make the
// node's reading unusable rather than guessed: the node is then *unknown*, and a
// failed or partial reading is never taken as zero load.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/metrics/prometheus_client.h"
#include "tidal/metrics/source_config.h"

namespace tidal {

// Which source fed each part of a node's reading (MetricsSourceName's names,
// "gpu-models" for a topology from the config's table, "pods" for a competition
// index from the extender's pod watch, "none" when nothing did).
struct NodeSources {
  std::string_view gpu_memory = "tidal-agent";
  std::string_view nvlink = "tidal-agent";
  std::string_view topology = "tidal-agent";
  std::string_view competition = "tidal-agent";
  std::string_view storage = "tidal-agent";
};

struct NodeMetrics {
  std::vector<Gpu> gpus;        // by index
  double storage_await_ms = 0;  // worst device
  double nvlink_competition = 0;
  TimeMs sample_time_ms = 0;  // newest agent sample seen for the node
  bool usable = true;         // false: see problems
  std::vector<std::string> problems;
  NodeSources sources;
  // What the reading lacks without making it doubtful (e.g. no NVLink topology
  // without the agent): said in /debug/nodes, the node stays known.
  std::vector<std::string> notes;
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
// SampleTimeQuery() (pure: tested on hand-written results): BuildSourcedSnapshot
// with every dimension from the agent.
MetricsSnapshot BuildSnapshot(const prom::QueryResult& series,
                              const prom::QueryResult& sample_times, const std::string& node_label,
                              TimeMs fetched_at_ms);

// Sources other than the agent alone (MetricsSourceConfig, docs/metrics-sources.md).
// Still two instant queries: every family and the node-exporter await in one
// (`or`, the await marked with the label tidal_series), and every source's
// newest sample time per node in the other (marked with tidal_source).
std::string SourcedSeriesQuery(const MetricsSourceConfig& sources,
                               const std::string& agent_node_label);
std::string SourcedSampleTimeQuery(const MetricsSourceConfig& sources,
                                   const std::string& agent_node_label);
// Builds the snapshot from those two results (pure). A node is in it when the GPU
// memory source has series for it (the agent: any of its series, as it runs on GPU
// nodes only); its sample time is the oldest of its sources' newest samples, so one
// stale source makes it stale. A sample time without the tidal_source mark is the
// agent's (SampleTimeQuery).
MetricsSnapshot BuildSourcedSnapshot(const prom::QueryResult& series,
                                     const prom::QueryResult& sample_times,
                                     const MetricsSourceConfig& sources,
                                     const std::string& agent_node_label, TimeMs fetched_at_ms);

// Where snapshots come from: Prometheus in production, a fake in tests.
class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  // Blocking; bounded by the source's own timeout. An error leaves *out untouched.
  virtual Status Fetch(TimeMs now_ms, MetricsSnapshot* out) = 0;
  virtual std::string Describe() const = 0;
};

// NVLink-using active pods per node, as the extender's pod watch counts them
// (PodUsesNvlink, docs/design.md#nvlink-use); a node without an entry has none.
using NvlinkPodCounts = std::unordered_map<std::string, int>;

// The competition index (docs/design.md#nvlink: NVLink pods / (GPUs × slots per GPU)) from
// `pods`, for each node of `snap` whose index the agent's series did not give
// (sources.competition not "tidal-agent"), or for every node when `prefer_pods`
// (NVLink from dcgm-exporter: the pod watch is that dimension's source, and sees
// a bind before the agent's next scrape). Such nodes say "pods".
void ApplyPodCompetition(const NvlinkPodCounts& pods, int slots_per_gpu, bool prefer_pods,
                         MetricsSnapshot* snap);

// Another source's snapshots with the competition index from the pod watch
// (ApplyPodCompetition). Until CountPodsWith is given a count (no pod watch, or
// it has not listed the pods yet), the snapshots pass through unchanged.
class PodCompetitionSource final : public MetricsSource {
 public:
  using PodCounter = std::function<std::optional<NvlinkPodCounts>()>;
  // `inner` outlives this. `prefer_pods`: as ApplyPodCompetition's.
  PodCompetitionSource(MetricsSource& inner, int slots_per_gpu, bool prefer_pods)
      : inner_(inner), slots_(slots_per_gpu), prefer_pods_(prefer_pods) {}
  // Before the first Fetch (not synchronised with it).
  void CountPodsWith(PodCounter pods) { pods_ = std::move(pods); }
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override;
  std::string Describe() const override { return inner_.Describe(); }

 private:
  MetricsSource& inner_;
  int slots_;
  bool prefer_pods_;
  PodCounter pods_;
};

class PrometheusSource final : public MetricsSource {
 public:
  // `node_label`: the agent's node label. `sources`: where each dimension comes
  // from; all from the agent runs exactly the agent's two queries.
  PrometheusSource(std::unique_ptr<prom::PrometheusClient> client, std::string node_label,
                   MetricsSourceConfig sources = {});
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override;
  std::string Describe() const override;

 private:
  std::unique_ptr<prom::PrometheusClient> client_;
  std::string node_label_;
  MetricsSourceConfig sources_;
};

}  // namespace tidal
