#include <algorithm>

#include "tidal/agent/gpu.h"

namespace tidal::agent {

Status NvlinkUtilization(const NvlinkThroughput& prev, const NvlinkThroughput& cur, int links,
                         double link_peak_bytes_per_s, double* out) {
  if (cur.tx_kib < prev.tx_kib || cur.rx_kib < prev.rx_kib)
    return Status::Error("NVLink throughput counters went backwards (reset or wrap)");
  if (cur.timestamp_us <= prev.timestamp_us)
    return Status::Error("NVLink counters were not resampled (timestamp did not advance)");
  if (links <= 0 || !(link_peak_bytes_per_s > 0))
    return Status::Error("NVLink peak bandwidth unknown");
  const double dt_s = static_cast<double>(cur.timestamp_us - prev.timestamp_us) / 1e6;
  // Links are full duplex: the busier direction is what competes.
  const double tx = static_cast<double>(cur.tx_kib - prev.tx_kib) * 1024 / dt_s;
  const double rx = static_cast<double>(cur.rx_kib - prev.rx_kib) * 1024 / dt_s;
  *out = std::clamp(std::max(tx, rx) / (links * link_peak_bytes_per_s), 0.0, 1.0);
  return Status();
}

GpuCollector::GpuCollector(std::unique_ptr<GpuSource> source, std::string missing_reason)
    : source_(std::move(source)), missing_reason_(std::move(missing_reason)) {}

namespace {

const GpuReading* Previous(const std::vector<GpuReading>& prev, const GpuReading& g) {
  for (const GpuReading& p : prev) {
    if (!g.uuid.empty() ? p.uuid == g.uuid : p.index == g.index) return &p;
  }
  return nullptr;
}

}  // namespace

Status GpuCollector::Collect(MetricSet& out) {
  out.Declare("ai_gpu_memory_utilization", "GPU memory used / total, 0-1.");
  out.Declare("ai_gpu_memory_used_bytes", "GPU framebuffer memory in use, bytes.");
  out.Declare("ai_gpu_memory_total_bytes", "GPU framebuffer memory, bytes.");
  out.Declare("ai_gpu_memory_reserved_bytes",
              "GPU memory reserved by the driver, bytes (NVML v2 memory call only).");
  out.Declare("ai_nvlink_bandwidth_utilization",
              "NVLink utilisation over the collection interval: the busier direction's throughput "
              "/ (active links x per-link peak), 0-1.");
  out.Declare("ai_gpu_nvlink_peer_links", "NVLink links from gpu_id to peer_gpu_id.");
  out.Declare("ai_gpu_nvlink_active_links", "Active NVLink links of the GPU.");
  out.Declare("ai_gpu_compute_processes", "Compute processes running on the GPU.");
  if (!source_) return Status::Error(missing_reason_);

  GpuReadout r;
  if (Status st = source_->Read(&r); !st.ok()) {
    prev_.clear();
    return st.Tag(source_->Name());
  }
  std::string problem = r.error;
  auto note = [&](const std::string& what) {
    if (problem.empty()) problem = what;
  };
  int readable = 0;
  for (const GpuReading& g : r.gpus) {
    if (!g.error.empty()) {
      note("GPU " + std::to_string(g.index) + (g.uuid.empty() ? "" : " (" + g.uuid + ")") + ": " +
           g.error);
      continue;
    }
    ++readable;
    const std::string id = std::to_string(g.index);
    if (g.memory_total && g.memory_used) {
      const LabelPairs labels{{"gpu_id", id}, {"uuid", g.uuid}, {"model", g.model}};
      const double total = static_cast<double>(*g.memory_total);
      const double used = static_cast<double>(*g.memory_used);
      out.Add("ai_gpu_memory_utilization", labels, total > 0 ? std::min(1.0, used / total) : 0);
      out.Add("ai_gpu_memory_used_bytes", labels, used);
      out.Add("ai_gpu_memory_total_bytes", labels, total);
      if (g.memory_reserved)
        out.Add("ai_gpu_memory_reserved_bytes", labels, static_cast<double>(*g.memory_reserved));
    }
    for (const NvlinkPeer& p : g.peers)
      out.Add("ai_gpu_nvlink_peer_links", {{"gpu_id", id}, {"peer_gpu_id", std::to_string(p.peer)}},
              p.links);
    if (g.active_links > 0 || g.throughput)
      out.Add("ai_gpu_nvlink_active_links", {{"gpu_id", id}}, g.active_links);
    if (g.processes) out.Add("ai_gpu_compute_processes", {{"gpu_id", id}}, *g.processes);
    if (!g.throughput) continue;
    const GpuReading* p = Previous(prev_, g);
    if (!p || !p->throughput) continue;  // first sample: a rate needs two
    double util = 0;
    if (Status st = NvlinkUtilization(*p->throughput, *g.throughput, g.active_links,
                                      g.link_peak_bytes_per_s, &util);
        !st.ok()) {
      note("GPU " + id + ": " + st.reason());
      continue;
    }
    out.Add("ai_nvlink_bandwidth_utilization", {{"gpu_id", id}}, util);
  }
  prev_ = std::move(r.gpus);
  gpu_count_ = readable;
  if (!problem.empty()) return Status::Error(std::string(source_->Name()) + ": " + problem);
  return Status();
}

}  // namespace tidal::agent
