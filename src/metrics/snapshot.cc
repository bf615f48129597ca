#include "tidal/metrics/snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "metrics/readings.h"
#include "tidal/core/text.h"

namespace tidal {
namespace {

// The agent's families.
using readings::kAgentAwait;
using readings::kAgentCompetition;
using readings::kAgentNvlink;
using readings::kAgentPeers;
using readings::kAgentTotal;
using readings::kAgentUsed;

// Per GPU while building: duplicates of one family must agree.
struct GpuAcc {
  std::optional<double> used, total, nvlink;
  std::string uuid, model;
  std::map<int, int> peers;
};

struct NodeAcc {
  std::map<int, GpuAcc> gpus;
  std::optional<double> competition;
  double await_ms = 0;
  std::vector<std::string> problems;
};

}  // namespace

std::string AgentSeriesSelector() {
  return fmt::format("{{__name__=~\"{}|{}|{}|{}|{}|{}\"}}", kAgentUsed, kAgentTotal, kAgentNvlink,
                     kAgentPeers, kAgentCompetition, kAgentAwait);
}

std::string SampleTimeQuery(const std::string& node_label) {
  return fmt::format("max by ({}) (timestamp(ai_collector_up))", node_label);
}

MetricsSnapshot BuildSnapshot(const prom::QueryResult& series,
                              const prom::QueryResult& sample_times, const std::string& node_label,
                              TimeMs fetched_at_ms) {
  MetricsSnapshot snap;
  snap.fetched_at_ms = fetched_at_ms;
  snap.series = series.series.size();
  std::map<std::string, NodeAcc> acc;
  std::size_t unlabelled = 0;
  for (const prom::Series& s : series.series) {
    if (s.points.empty()) continue;
    const auto name_it = s.metric.find("__name__");
    const auto node_it = s.metric.find(node_label);
    if (name_it == s.metric.end()) continue;
    if (node_it == s.metric.end() || node_it->second.empty()) {
      ++unlabelled;
      continue;
    }
    const std::string& name = name_it->second;
    NodeAcc& node = acc[node_it->second];
    const double v = s.points.back().value;
    const std::string what = readings::DescribeSeries(name, s.metric);
    if (!std::isfinite(v) || v < 0) {
      node.problems.push_back(fmt::format("{} = {}: expected a finite value ≥ 0", what, v));
      continue;
    }
    if (name == kAgentCompetition) {
      readings::Merge(&node.competition, v, what, &node.problems);
      continue;
    }
    if (name == kAgentAwait) {
      const double ms = v * 1000;  // the policy works in ms
      if (!std::isfinite(ms)) {
        // A huge reading overflows: unknown, like any other unreadable value.
        node.problems.push_back(fmt::format("{} = {}: too large for an await in ms", what, v));
        continue;
      }
      node.await_ms = std::max(node.await_ms, ms);  // the worst device decides
      continue;
    }
    const auto gpu = readings::GpuIndex(s.metric, "gpu_id");
    if (!gpu) {
      node.problems.push_back(what + ": expected a gpu_id label 0.." +
                              std::to_string(kMaxGpusPerNode - 1));
      continue;
    }
    GpuAcc& g = node.gpus[*gpu];
    if (name == kAgentUsed || name == kAgentTotal) {
      readings::Merge(name == kAgentUsed ? &g.used : &g.total, v, what, &node.problems);
      if (const auto it = s.metric.find("uuid"); it != s.metric.end() && !it->second.empty())
        g.uuid = it->second;
      if (const auto it = s.metric.find("model"); it != s.metric.end() && !it->second.empty())
        g.model = it->second;
    } else if (name == kAgentNvlink) {
      readings::Merge(&g.nvlink, std::min(v, 1.0), what, &node.problems);
    } else if (name == kAgentPeers) {
      const auto peer = readings::GpuIndex(s.metric, "peer_gpu_id");
      if (!peer) {
        node.problems.push_back(what + ": expected a peer_gpu_id label");
        continue;
      }
      const auto links = readings::LinkCount(v, what, &node.problems);
      if (!links) continue;
      g.peers[*peer] = std::max(g.peers[*peer], *links);
    }
  }
  if (unlabelled > 0)
    snap.problems.push_back(
        fmt::format("{} agent series have no {} label (relabel them; they are ignored)", unlabelled,
                    QuoteInput(node_label)));

  // Newest sample per node; a value that is no Unix time is kept as nothing.
  std::map<std::string, std::optional<TimeMs>> times;
  for (const prom::Series& s : sample_times.series) {
    const auto it = s.metric.find(node_label);
    if (it == s.metric.end() || s.points.empty()) continue;
    times[it->second] = prom::UnixSecondsToMs(s.points.back().value);
  }

  for (auto& [name, a] : acc) {
    NodeMetrics m;
    m.storage_await_ms = a.await_ms;
    m.nvlink_competition = a.competition.value_or(0);
    // Without the agent's series (its pod collector down) the pod watch may give it.
    if (!a.competition) m.sources.competition = "none";
    m.problems = std::move(a.problems);
    const auto t = times.find(name);
    if (t == times.end())
      m.problems.push_back("no sample time (ai_collector_up is missing)");
    else if (!t->second)
      m.problems.push_back("no sample time (ai_collector_up's time is not a Unix time)");
    else
      m.sample_time_ms = *t->second;
    for (auto& [index, g] : a.gpus) {
      if (!g.used || !g.total) {
        m.problems.push_back(
            fmt::format("GPU {}: {} is missing", index, g.used ? kAgentTotal : kAgentUsed));
        continue;
      }
      if (auto problem = readings::GpuMemoryProblem(index, *g.used, *g.total)) {
        m.problems.push_back(std::move(*problem));
        continue;
      }
      Gpu gpu;
      gpu.index = index;
      gpu.uuid = std::move(g.uuid);
      gpu.model = std::move(g.model);
      gpu.memory_total = static_cast<Bytes>(*g.total);
      gpu.memory_used = static_cast<Bytes>(*g.used);
      gpu.nvlink_utilization = g.nvlink.value_or(0);
      for (const auto& [peer, links] : g.peers)
        if (links > 0 && peer != index) gpu.nvlink_peers.push_back({peer, links});
      m.gpus.push_back(std::move(gpu));
    }
    // Any doubt about the reading makes the node unknown, never idle.
    m.usable = m.problems.empty() && !m.gpus.empty();
    if (m.gpus.empty() && m.problems.empty()) m.problems.push_back("no GPU memory series");
    snap.nodes.emplace(name, std::move(m));
  }
  return snap;
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
  *out = agent ? BuildSnapshot(series, times, node_label_, now_ms)
               : BuildSourcedSnapshot(series, times, sources_, node_label_, now_ms);
  return Status::Ok();
}

}  // namespace tidal
