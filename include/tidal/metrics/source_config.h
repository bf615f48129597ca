#pragma once
// Which exporter feeds each load dimension: a plain struct the policy config
// reads into (`metricsSource:` in the config file) and the metrics layer acts on.
#include <map>
#include <string>

#include "tidal/core/clock.h"

namespace tidal {

// Where the extender reads each load dimension from (docs/metrics-sources.md):
// Tidal's own agent (the ai_* series), or the exporters a GPU cluster usually
// already runs: NVIDIA's dcgm-exporter for GPU memory and NVLink traffic,
// Prometheus' node-exporter for storage await.
enum class MetricsSourceKind { kTidalAgent, kDcgmExporter, kNodeExporter };
constexpr const char* MetricsSourceName(MetricsSourceKind kind) {
  switch (kind) {
    case MetricsSourceKind::kDcgmExporter:
      return "dcgm-exporter";
    case MetricsSourceKind::kNodeExporter:
      return "node-exporter";
    case MetricsSourceKind::kTidalAgent:
      break;
  }
  return "tidal-agent";
}

// dcgm-exporter has NVLink traffic two ways: the profiling gauges
// DCGM_FI_PROF_NVLINK_TX_BYTES/RX_BYTES (bytes/s per direction, need DCGM's
// profiling module) or DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (default counters).
enum class DcgmNvlinkSeries { kProfiling, kBandwidthTotal };

// What dcgm-exporter's series do not say about a GPU model: its NVLink topology
// (which GPUs are linked) and its NVLink peak, for the utilisation.
struct GpuModelInfo {
  bool fully_linked = false;    // NVSwitch systems: every pair of the node's GPUs linked
  int links_per_pair = 1;       // links between two GPUs when fully linked (topo -m's NV#)
  double nvlink_peak_gbps = 0;  // per GPU and direction, all links, GB/s; 0: not known
  friend bool operator==(const GpuModelInfo&, const GpuModelInfo&) = default;
};

struct MetricsSourceConfig {
  MetricsSourceKind gpu_memory = MetricsSourceKind::kTidalAgent;
  MetricsSourceKind nvlink = MetricsSourceKind::kTidalAgent;
  MetricsSourceKind storage = MetricsSourceKind::kTidalAgent;
  // dcgm-exporter: the label naming the node (its own Hostname, or node /
  // kubernetes_node added by scrape relabelling).
  std::string dcgm_node_label = "Hostname";
  DcgmNvlinkSeries dcgm_nvlink_series = DcgmNvlinkSeries::kProfiling;
  // DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL's unit in bytes (its documentation gives
  // none; NVIDIA's maintainers say KB/s).
  double dcgm_bandwidth_total_bytes_per_unit = 1024;
  std::string node_exporter_node_label = "node";
  // node-exporter's `device` label values to read (RE2, fully anchored, as PromQL's
  // =~): the data disks. The default takes whole disks, no partitions.
  std::string node_exporter_devices = "nvme[0-9]+n[0-9]+|sd[a-z]+|vd[a-z]+|xvd[a-z]+";
  TimeMs node_exporter_rate_window_ms = 60'000;
  std::map<std::string, GpuModelInfo> gpu_models;  // by dcgm-exporter's modelName

  // Today's behaviour: every dimension from the agent.
  bool AllAgent() const {
    return gpu_memory == MetricsSourceKind::kTidalAgent &&
           nvlink == MetricsSourceKind::kTidalAgent && storage == MetricsSourceKind::kTidalAgent;
  }
  bool Uses(MetricsSourceKind kind) const {
    return gpu_memory == kind || nvlink == kind || storage == kind;
  }
};

}  // namespace tidal
