// Snapshots from the agent, dcgm-exporter and node-exporter, alone or mixed per
// dimension (docs/metrics-sources.md): one builder for every source, so that a
// reading is judged the same way whichever exporter gave it (readings.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "metrics/readings.h"
#include "tidal/core/text.h"
#include "tidal/metrics/snapshot.h"

namespace tidal {
namespace {

using K = MetricsSourceKind;
// The agent's families.
using readings::kAgentAwait;
using readings::kAgentCompetition;
using readings::kAgentNvlink;
using readings::kAgentPeers;
using readings::kAgentTotal;
using readings::kAgentUp;
using readings::kAgentUsed;
using readings::kSeriesMark;

// dcgm-exporter's (etc/default-counters.csv and dcp-metrics-included.csv).
// Framebuffer values are in MiB.
constexpr const char* kFbUsed = "DCGM_FI_DEV_FB_USED";
constexpr const char* kFbFree = "DCGM_FI_DEV_FB_FREE";
constexpr const char* kFbReserved = "DCGM_FI_DEV_FB_RESERVED";
constexpr const char* kFbTotal = "DCGM_FI_DEV_FB_TOTAL";  // not a default counter; used when there
constexpr const char* kNvlinkTx = "DCGM_FI_PROF_NVLINK_TX_BYTES";  // bytes/s
constexpr const char* kNvlinkRx = "DCGM_FI_PROF_NVLINK_RX_BYTES";
constexpr const char* kNvlinkTotal = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL";
constexpr double kMiB = 1024.0 * 1024.0;

// Labels the queries add, so that one query can carry several sources (and
// readings::kSeriesMark, whose value marks the node-exporter await).
constexpr const char* kDiskAwait = "node_disk_await_seconds";
constexpr const char* kSourceMark = "tidal_source";

std::string PromDuration(TimeMs ms) {
  return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{}ms", ms);
}

// The family whose timestamp is dcgm-exporter's sample time: the memory one
// when it feeds memory, else the NVLink one it reads.
const char* DcgmClockFamily(const MetricsSourceConfig& c) {
  if (c.gpu_memory == K::kDcgmExporter) return kFbUsed;
  return c.dcgm_nvlink_series == DcgmNvlinkSeries::kProfiling ? kNvlinkTx : kNvlinkTotal;
}

std::string DiskSelector(const MetricsSourceConfig& c) {
  // A raw string: the regular expression's backslashes reach RE2 as written
  // (config validation refuses backticks).
  return fmt::format("{{device=~`{}`}}", c.node_exporter_devices);
}

struct GpuAcc {
  std::optional<double> used, total, free, reserved, fb_total;  // bytes
  std::optional<double> tx, rx, bw;                             // bytes/s
  std::optional<double> nvlink;                                 // agent's 0..1
  std::string uuid, model;
  std::map<int, int> peers;
};

struct NodeAcc {
  std::map<int, GpuAcc> gpus;
  std::optional<double> competition;
  double await_ms = 0;
  int await_series = 0;
  bool has_memory = false;  // series from the GPU memory source (the agent: any)
  bool agent_peers = false;
  bool nvlink_series = false;
  std::vector<std::string> problems;
};

// A dcgm-exporter series names its GPU by `gpu` and `UUID`: two different UUIDs
// at one index on one node mean the node label does not tell nodes apart (or MIG
// instances, which Tidal does not read).
bool SameGpu(GpuAcc& g, const Labels& labels, const std::string& what, NodeAcc* node) {
  const std::string_view uuid = readings::Label(labels, "UUID");
  if (!uuid.empty() && !g.uuid.empty() && uuid != g.uuid) {
    node->problems.push_back(fmt::format(
        "{}: a second GPU at this index (UUID {} and {}): expected one series per GPU; the node "
        "label may not tell nodes apart",
        what, QuoteInput(g.uuid), QuoteInput(uuid)));
    return false;
  }
  if (!readings::Label(labels, "GPU_I_ID").empty()) {
    node->problems.push_back(what + ": a MIG instance (GPU_I_ID): expected whole GPUs");
    return false;
  }
  if (!uuid.empty()) g.uuid = uuid;
  if (const std::string_view m = readings::Label(labels, "modelName"); !m.empty()) g.model = m;
  return true;
}

}  // namespace

std::string SourcedSeriesQuery(const MetricsSourceConfig& c, const std::string& agent_node_label) {
  (void)agent_node_label;  // the agent's series are selected by name; the label joins them
  std::vector<std::string> names;
  if (c.gpu_memory == K::kTidalAgent) names.insert(names.end(), {kAgentUsed, kAgentTotal});
  if (c.nvlink == K::kTidalAgent) names.push_back(kAgentNvlink);
  // Topology and the competition index from the agent wherever it runs.
  names.insert(names.end(), {kAgentPeers, kAgentCompetition});
  if (c.storage == K::kTidalAgent) names.push_back(kAgentAwait);
  if (c.gpu_memory == K::kDcgmExporter)
    names.insert(names.end(), {kFbUsed, kFbFree, kFbReserved, kFbTotal});
  if (c.nvlink == K::kDcgmExporter) {
    if (c.dcgm_nvlink_series == DcgmNvlinkSeries::kProfiling)
      names.insert(names.end(), {kNvlinkTx, kNvlinkRx});
    else
      names.push_back(kNvlinkTotal);
  }
  std::string q = "{__name__=~\"";
  for (std::size_t i = 0; i < names.size(); ++i) q += (i ? "|" : "") + std::string(names[i]);
  q += "\"}";
  if (c.storage == K::kNodeExporter) {
    // iostat's await per device over the window: Δ(read + write time) / Δ(reads +
    // writes), as rates (the window's length cancels). A device without I/O in
    // the window has an await of 0, as iostat prints, not NaN.
    const std::string d = DiskSelector(c), w = PromDuration(c.node_exporter_rate_window_ms);
    const std::string ios = fmt::format(
        "(rate(node_disk_reads_completed_total{0}[{1}]) + "
        "rate(node_disk_writes_completed_total{0}[{1}]))",
        d, w);
    q += fmt::format(
        " or label_replace((rate(node_disk_read_time_seconds_total{0}[{1}]) + "
        "rate(node_disk_write_time_seconds_total{0}[{1}])) / ({2} > 0) or {2} * 0, "
        "\"{3}\", \"{4}\", \"\", \"\")",
        d, w, ios, kSeriesMark, kDiskAwait);
  }
  return q;
}

std::string SourcedSampleTimeQuery(const MetricsSourceConfig& c,
                                   const std::string& agent_node_label) {
  std::vector<std::string> parts;
  auto part = [&](const std::string& label, const std::string& series, K source) {
    parts.push_back(
        fmt::format("label_replace(max by ({}) (timestamp({})), \"{}\", \"{}\", \"\", \"\")", label,
                    series, kSourceMark, MetricsSourceName(source)));
  };
  if (c.Uses(K::kTidalAgent)) part(agent_node_label, kAgentUp, K::kTidalAgent);
  if (c.Uses(K::kDcgmExporter)) part(c.dcgm_node_label, DcgmClockFamily(c), K::kDcgmExporter);
  if (c.Uses(K::kNodeExporter))
    part(c.node_exporter_node_label, "node_disk_reads_completed_total" + DiskSelector(c),
         K::kNodeExporter);
  std::string q;
  for (const auto& p : parts) q += (q.empty() ? "" : " or ") + p;
  return q;
}

namespace {

// The label naming the node in `source`'s series.
const std::string& NodeLabelOf(K source, const MetricsSourceConfig& c,
                               const std::string& agent_node_label) {
  if (source == K::kDcgmExporter) return c.dcgm_node_label;
  if (source == K::kNodeExporter) return c.node_exporter_node_label;
  return agent_node_label;
}

// A dcgm-exporter series' value into its GPU's slot (framebuffer in MiB).
void AddDcgmReading(std::string_view name, double v, const std::string& what,
                    const MetricsSourceConfig& c, GpuAcc& g, NodeAcc& node) {
  std::vector<std::string>* problems = &node.problems;
  if (name == kFbUsed)
    readings::Merge(&g.used, v * kMiB, what, problems);
  else if (name == kFbFree)
    readings::Merge(&g.free, v * kMiB, what, problems);
  else if (name == kFbReserved)
    readings::Merge(&g.reserved, v * kMiB, what, problems);
  else if (name == kFbTotal)
    readings::Merge(&g.fb_total, v * kMiB, what, problems);
  else if (name == kNvlinkTx)
    readings::Merge(&g.tx, v, what, problems);
  else if (name == kNvlinkRx)
    readings::Merge(&g.rx, v, what, problems);
  else if (name == kNvlinkTotal)
    readings::Merge(&g.bw, v * c.dcgm_bandwidth_total_bytes_per_unit, what, problems);
  node.nvlink_series =
      node.nvlink_series || name == kNvlinkTx || name == kNvlinkRx || name == kNvlinkTotal;
}

// An agent series' value into its GPU's slot.
void AddAgentGpuReading(std::string_view name, double v, const std::string& what,
                        const Labels& labels, GpuAcc& g, NodeAcc& node) {
  if (name == kAgentUsed || name == kAgentTotal) {
    readings::Merge(name == kAgentUsed ? &g.used : &g.total, v, what, &node.problems);
    if (const std::string_view u = readings::Label(labels, "uuid"); !u.empty()) g.uuid = u;
    if (const std::string_view m = readings::Label(labels, "model"); !m.empty()) g.model = m;
  } else if (name == kAgentNvlink) {
    readings::Merge(&g.nvlink, std::min(v, 1.0), what, &node.problems);
  } else if (name == kAgentPeers) {
    const auto peer = readings::GpuIndex(labels, "peer_gpu_id");
    if (!peer) {
      node.problems.push_back(what + ": expected a peer_gpu_id label");
      return;
    }
    const auto links = readings::LinkCount(v, what, &node.problems);
    if (!links) return;
    g.peers[*peer] = std::max(g.peers[*peer], *links);
    node.agent_peers = true;
  }
}

// One series' newest value into its node: node-wide values first, then per GPU.
void AddReading(std::string_view name, K source, const prom::Series& s,
                const MetricsSourceConfig& c, NodeAcc& node) {
  const double v = s.points.back().value;
  const std::string what = readings::DescribeSeries(name, s.metric);
  if (!std::isfinite(v) || v < 0) {
    node.problems.push_back(fmt::format("{} = {}: expected a finite value ≥ 0", what, v));
    return;
  }
  if (name == kAgentCompetition) {
    readings::Merge(&node.competition, v, what, &node.problems);
    return;
  }
  if (name == kAgentAwait || name == kDiskAwait) {
    const double ms = v * 1000;  // the policy works in ms
    if (!std::isfinite(ms)) {
      node.problems.push_back(fmt::format("{} = {}: too large for an await in ms", what, v));
      return;
    }
    node.await_ms = std::max(node.await_ms, ms);  // the worst device decides
    ++node.await_series;
    return;
  }
  const bool dcgm = source == K::kDcgmExporter;
  const auto gpu = readings::GpuIndex(s.metric, dcgm ? "gpu" : "gpu_id");
  if (!gpu) {
    node.problems.push_back(fmt::format("{}: expected a {} label 0..{}", what,
                                        dcgm ? "gpu" : "gpu_id", kMaxGpusPerNode - 1));
    return;
  }
  GpuAcc& g = node.gpus[*gpu];
  if (!dcgm)
    AddAgentGpuReading(name, v, what, s.metric, g, node);
  else if (SameGpu(g, s.metric, what, &node))
    AddDcgmReading(name, v, what, c, g, node);
}

struct Accumulated {
  std::map<std::string, NodeAcc, std::less<>> nodes;
  std::map<K, std::size_t> unlabelled;  // series without their source's node label
};

Accumulated Accumulate(const prom::QueryResult& series, const MetricsSourceConfig& c,
                       const std::string& agent_node_label) {
  Accumulated acc;
  for (const prom::Series& s : series.series) {
    if (s.points.empty()) continue;
    std::string_view name = readings::Label(s.metric, "__name__");
    if (readings::Label(s.metric, kSeriesMark) == kDiskAwait) name = kDiskAwait;
    if (name.empty()) continue;
    const K source = name.rfind("DCGM_", 0) == 0 ? K::kDcgmExporter
                     : name == kDiskAwait        ? K::kNodeExporter
                                                 : K::kTidalAgent;
    const std::string_view node_name =
        readings::Label(s.metric, NodeLabelOf(source, c, agent_node_label).c_str());
    if (node_name.empty()) {
      ++acc.unlabelled[source];
      continue;
    }
    auto at = acc.nodes.find(node_name);
    if (at == acc.nodes.end()) at = acc.nodes.emplace(node_name, NodeAcc{}).first;
    NodeAcc& node = at->second;
    // The memory source's series put the node in the snapshot, doubtful or not:
    // a bad reading must make it unknown, not leave it out unexplained. The agent
    // runs on GPU nodes only: any of its series does (a node whose agent reads no
    // GPU is unknown, "no GPU memory series").
    node.has_memory =
        node.has_memory || (c.gpu_memory == K::kDcgmExporter ? name == kFbUsed || name == kFbFree
                                                             : source == K::kTidalAgent);
    AddReading(name, source, s, c, node);
  }
  return acc;
}

// Newest sample per (source, node); a value that is no Unix time is kept as
// nothing, and named by SetSampleTime. A series without the source mark is the
// agent's (SampleTimeQuery, the agent-only query).
using SampleTimes = std::map<std::pair<std::string, std::string>, std::optional<TimeMs>>;

SampleTimes ReadSampleTimes(const prom::QueryResult& sample_times, const MetricsSourceConfig& c,
                            const std::string& agent_node_label) {
  SampleTimes times;
  for (const prom::Series& s : sample_times.series) {
    if (s.points.empty()) continue;
    std::string source(readings::Label(s.metric, kSourceMark));
    if (source.empty()) source = MetricsSourceName(K::kTidalAgent);
    const K kind = source == MetricsSourceName(K::kDcgmExporter)   ? K::kDcgmExporter
                   : source == MetricsSourceName(K::kNodeExporter) ? K::kNodeExporter
                                                                   : K::kTidalAgent;
    const std::string node(
        readings::Label(s.metric, NodeLabelOf(kind, c, agent_node_label).c_str()));
    if (node.empty()) continue;
    times[{source, node}] = prom::UnixSecondsToMs(s.points.back().value);
  }
  return times;
}

// The oldest of the sources' newest samples: one stale source, a stale node.
void SetSampleTime(const std::string& node, const SampleTimes& times, const MetricsSourceConfig& c,
                   NodeMetrics* m) {
  std::optional<TimeMs> sample;
  for (K k : {K::kTidalAgent, K::kDcgmExporter, K::kNodeExporter}) {
    if (!c.Uses(k)) continue;
    const auto t = times.find({MetricsSourceName(k), node});
    if (t == times.end()) {
      m->problems.push_back(fmt::format(
          "no sample time from {} ({} is missing for the node)", MetricsSourceName(k),
          k == K::kTidalAgent     ? std::string(kAgentUp)
          : k == K::kDcgmExporter ? std::string(DcgmClockFamily(c))
                                  : "node_disk_reads_completed_total" + DiskSelector(c)));
      continue;
    }
    if (!t->second) {
      m->problems.push_back(fmt::format("no sample time from {} (its time is not a Unix time)",
                                        MetricsSourceName(k)));
      continue;
    }
    sample = sample ? std::min(*sample, *t->second) : *t->second;
  }
  m->sample_time_ms = sample.value_or(0);
}

// A GPU's memory in bytes as read, or a problem: dcgm-exporter's total is NVML
// v2's used + free + reserved (used without the driver's reservation), or
// DCGM_FI_DEV_FB_TOTAL when exported.
bool ReadGpuMemory(int index, const GpuAcc& g, const MetricsSourceConfig& c, Gpu* gpu,
                   std::vector<std::string>* problems) {
  std::optional<double> used = g.used, total = g.total;
  if (c.gpu_memory == K::kDcgmExporter) {
    // A GPU seen in any series (NVLink, the agent's peers) without its memory
    // is a partial reading, as in the agent's.
    if (!g.used || (!g.free && !g.fb_total)) {
      problems->push_back(fmt::format("GPU {}: {} is missing", index, g.used ? kFbFree : kFbUsed));
      return false;
    }
    total = g.fb_total ? *g.fb_total : *g.used + *g.free + g.reserved.value_or(0);
  } else if (!used || !total) {
    problems->push_back(
        fmt::format("GPU {}: {} is missing", index, used ? kAgentTotal : kAgentUsed));
    return false;
  }
  if (auto problem = readings::GpuMemoryProblem(index, *used, *total)) {
    problems->push_back(std::move(*problem));
    return false;
  }
  gpu->memory_total = static_cast<Bytes>(*total);
  gpu->memory_used = static_cast<Bytes>(*used);
  return true;
}

// The GPU's NVLink utilisation from the configured source. dcgm-exporter's
// counters need the model's peak; without it, false (the caller notes it).
bool ReadNvlinkUtilisation(const GpuAcc& g, const MetricsSourceConfig& c, Gpu* gpu) {
  if (c.nvlink == K::kTidalAgent) {
    gpu->nvlink_utilization = g.nvlink.value_or(0);
    return true;
  }
  if (!g.tx && !g.rx && !g.bw) return true;
  const auto it = c.gpu_models.find(g.model);
  if (it == c.gpu_models.end() || it->second.nvlink_peak_gbps <= 0) return false;
  const double peak = it->second.nvlink_peak_gbps * 1e9;
  // Profiling: the busier direction against one direction's peak, as the agent
  // does. The total counter sums both directions of every link.
  const double u = c.dcgm_nvlink_series == DcgmNvlinkSeries::kProfiling
                       ? std::max(g.tx.value_or(0), g.rx.value_or(0)) / peak
                       : g.bw.value_or(0) / (2 * peak);
  gpu->nvlink_utilization = std::clamp(u, 0.0, 1.0);
  return true;
}

void AddGpus(NodeAcc& a, const MetricsSourceConfig& c, NodeMetrics* m) {
  std::optional<std::string> model_without_peak;
  for (auto& [index, g] : a.gpus) {
    Gpu gpu;
    gpu.index = index;
    if (!ReadGpuMemory(index, g, c, &gpu, &m->problems)) continue;
    gpu.uuid = g.uuid;
    gpu.model = g.model;
    if (!ReadNvlinkUtilisation(g, c, &gpu)) model_without_peak = g.model;
    for (const auto& [peer, links] : g.peers)
      if (links > 0 && peer != index) gpu.nvlink_peers.push_back({peer, links});
    m->gpus.push_back(std::move(gpu));
  }
  if (model_without_peak)
    m->notes.push_back(fmt::format(
        "NVLink traffic not used: no gpuModels[{}].nvlinkPeakGBps (utilisation taken as 0)",
        QuoteInput(*model_without_peak)));
  if (c.nvlink == K::kDcgmExporter && !a.nvlink_series)
    m->notes.push_back(
        fmt::format("no NVLink traffic series from dcgm-exporter ({}): "
                    "utilisation taken as 0",
                    c.dcgm_nvlink_series == DcgmNvlinkSeries::kProfiling
                        ? "DCGM_FI_PROF_NVLINK_TX_BYTES/RX_BYTES"
                        : kNvlinkTotal));
}

// Topology: the agent's peer series where it runs, and the agent's word (no
// peers: no NVLink) where it is the NVLink source; else the model table.
void SetTopology(const NodeAcc& a, const MetricsSourceConfig& c, NodeMetrics* m) {
  if (a.agent_peers || c.nvlink == K::kTidalAgent) {
    m->sources.topology = MetricsSourceName(K::kTidalAgent);
    return;
  }
  std::string model;
  bool one_model = !m->gpus.empty();
  for (const Gpu& g : m->gpus) {
    if (model.empty()) model = g.model;
    one_model = one_model && g.model == model;
  }
  const auto it = one_model ? c.gpu_models.find(model) : c.gpu_models.end();
  if (it != c.gpu_models.end() && it->second.fully_linked) {
    m->sources.topology = "gpu-models";
    for (Gpu& g : m->gpus)
      for (const Gpu& p : m->gpus)
        if (p.index != g.index) g.nvlink_peers.push_back({p.index, it->second.links_per_pair});
    return;
  }
  m->sources.topology = "none";
  if (m->gpus.size() > 1)
    m->notes.push_back(fmt::format(
        "no NVLink topology (no agent, and gpuModels does not mark {} fully-linked): the "
        "GPUs are taken as unlinked",
        one_model ? QuoteInput(model) : std::string("a node of mixed models")));
}

NodeMetrics NodeFromReadings(const std::string& name, NodeAcc& a, const SampleTimes& times,
                             const MetricsSourceConfig& c) {
  NodeMetrics m;
  m.sources.gpu_memory = MetricsSourceName(c.gpu_memory);
  m.sources.nvlink = MetricsSourceName(c.nvlink);
  m.sources.storage = MetricsSourceName(c.storage);
  m.problems = std::move(a.problems);
  m.storage_await_ms = a.await_ms;
  m.nvlink_competition = a.competition.value_or(0);
  // Without the agent's series (its pod collector down) the pod watch may give it.
  m.sources.competition = a.competition ? MetricsSourceName(K::kTidalAgent) : "none";
  SetSampleTime(name, times, c, &m);
  if (c.storage == K::kNodeExporter && a.await_series == 0)
    m.problems.push_back(
        "no storage await from node-exporter (no device matches nodeExporter.devices, or the "
        "rate window does not hold two samples yet)");
  AddGpus(a, c, &m);
  SetTopology(a, c, &m);
  // Any doubt about the reading makes the node unknown, never idle.
  m.usable = m.problems.empty() && !m.gpus.empty();
  if (m.gpus.empty() && m.problems.empty()) m.problems.push_back("no GPU memory series");
  return m;
}

}  // namespace

MetricsSnapshot BuildSourcedSnapshot(const prom::QueryResult& series,
                                     const prom::QueryResult& sample_times,
                                     const MetricsSourceConfig& c,
                                     const std::string& agent_node_label, TimeMs fetched_at_ms) {
  MetricsSnapshot snap;
  snap.fetched_at_ms = fetched_at_ms;
  snap.series = series.series.size();
  Accumulated acc = Accumulate(series, c, agent_node_label);
  for (const auto& [source, n] : acc.unlabelled)
    snap.problems.push_back(fmt::format(
        "{} {} series have no {} label (relabel them, see docs/metrics-sources.md; they are "
        "ignored)",
        n, MetricsSourceName(source), QuoteInput(NodeLabelOf(source, c, agent_node_label))));
  const SampleTimes times = ReadSampleTimes(sample_times, c, agent_node_label);
  for (auto& [name, a] : acc.nodes)
    // Nodes the GPU memory source does not know are not GPU nodes (node-exporter
    // runs on every node; the agent may run where dcgm-exporter does not).
    if (a.has_memory) snap.nodes.emplace(name, NodeFromReadings(name, a, times, c));
  return snap;
}

void ApplyPodCompetition(const NvlinkPodCounts& pods, int slots_per_gpu, bool prefer_pods,
                         MetricsSnapshot* snap) {
  for (auto& [name, m] : snap->nodes) {
    if (!prefer_pods && m.sources.competition == MetricsSourceName(K::kTidalAgent)) continue;
    const auto it = pods.find(name);
    // The GPUs the reading has, as the agent divides by its GPU collector's count.
    m.nvlink_competition = NvlinkCompetitionIndex(it == pods.end() ? 0 : it->second,
                                                  static_cast<int>(m.gpus.size()), slots_per_gpu);
    m.sources.competition = "pods";
  }
}

Status PodCompetitionSource::Fetch(TimeMs now_ms, MetricsSnapshot* out) {
  MetricsSnapshot snap;
  if (Status st = inner_.Fetch(now_ms, &snap); !st.ok()) return st;
  // Counted after the fetch: never older than the metrics it joins.
  if (pods_)
    if (const std::optional<NvlinkPodCounts> counts = pods_())
      ApplyPodCompetition(*counts, slots_, prefer_pods_, &snap);
  *out = std::move(snap);
  return Status::Ok();
}

}  // namespace tidal
