#pragma once
// GPU readings (memory, NVLink, processes) from NVML or nvidia-smi behind one
// source interface, and the collector that turns them into series. No NVML type
// appears here: the NVML declarations are private to src/agent.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tidal/agent/collector.h"
#include "tidal/core/types.h"

namespace tidal::agent {

struct NvlinkThroughput {
  std::uint64_t tx_kib = 0;  // cumulative KiB, summed over links
  std::uint64_t rx_kib = 0;
  std::int64_t timestamp_us = 0;  // when the driver sampled the counters
};

struct GpuReading {
  int index = 0;
  std::string uuid;
  std::string model;
  std::string bus_id;  // normalised "00000000:18:00.0"
  // Empty when the GPU answered; otherwise why it did not (lost, unknown error).
  std::string error;
  std::optional<std::uint64_t> memory_total;  // bytes; absent when not reported
  std::optional<std::uint64_t> memory_used;
  std::optional<std::uint64_t> memory_reserved;
  int active_links = 0;                        // NVLink links in the active state
  std::optional<NvlinkThroughput> throughput;  // absent: no counters (old driver, no NVLink)
  double link_peak_bytes_per_s = 0;            // per link and direction; 0 unknown
  std::vector<NvlinkPeer> peers;               // GPU-to-GPU NVLink links, by index
  std::optional<int> processes;                // running compute processes
};

struct GpuReadout {
  std::vector<GpuReading> gpus;
  // A problem that is not one GPU's (e.g. the topology could not be read).
  std::string error;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual std::string_view Name() const = 0;  // "nvml" or "nvidia-smi"
  // Fills `out`. Per-GPU failures go into GpuReading::error; a non-OK Status
  // means nothing could be read this time.
  virtual Status Read(GpuReadout* out) = 0;
};

// Loads NVML with dlopen from `library` ("libnvidia-ml.so.1" searches the loader
// path) and initialises it. Returns null with `why` set when that fails.
std::unique_ptr<GpuSource> OpenNvml(const std::string& library, std::string* why);

// Runs a program with fixed arguments (execve, no shell) and captures stdout,
// killing it after `timeout_ms`. Injected into the nvidia-smi source.
using CommandRunner =
    std::function<Status(const std::vector<std::string>& argv, int timeout_ms, std::string* out)>;
Status RunProgram(const std::vector<std::string>& argv, int timeout_ms, std::string* out);

// `nvidia-smi -q -d MEMORY`, `--query-gpu=index,uuid,name,pci.bus_id` (the UUID
// and model the MEMORY section lacks) and `nvidia-smi topo -m` through `run`.
std::unique_ptr<GpuSource> MakeNvidiaSmiSource(std::string nvidia_smi, int timeout_ms,
                                               CommandRunner run);

// Per-GPU memory from `nvidia-smi -q` (any -d selection that includes MEMORY):
// the top-level "FB Memory Usage" block of each "GPU <bus id>" section, and
// Product Name / GPU UUID when the output has them. MIG "Shared FB Memory Usage"
// blocks are not counted twice.
Status ParseSmiMemory(std::string_view text, std::vector<GpuReading>* out);

// One row of `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv`.
struct SmiGpuIdentity {
  int index = 0;
  std::string uuid, model, bus_id;  // empty when nvidia-smi reports [N/A] or similar
};
// Columns are found by their header name (a unit in brackets is ignored), so a
// wider query or another column order reads the same; a row with the wrong number
// of cells or a non-numeric index is an error naming the line.
Status ParseSmiGpuCsv(std::string_view text, std::vector<SmiGpuIdentity>* out);

// Exposes memory, NVLink utilisation over the interval and NVLink peers.
// `gpu_count` of the last successful pass is kept for the competition index.
class GpuCollector final : public Collector {
 public:
  // `source` may be null (neither NVML nor nvidia-smi): the collector reports
  // down with `missing_reason` and the rest of the agent works.
  GpuCollector(std::unique_ptr<GpuSource> source, std::string missing_reason);
  std::string_view Name() const override { return "gpu"; }
  Status Collect(MetricSet& out) override;
  // GPUs seen in the last pass that read any; nullopt before that.
  std::optional<int> gpu_count() const { return gpu_count_; }

 private:
  std::unique_ptr<GpuSource> source_;
  std::string missing_reason_;
  std::optional<int> gpu_count_;
  std::vector<GpuReading> prev_;  // last pass, for rates
};

// Utilisation of a GPU's NVLink between two throughput samples: the busier
// direction's rate over links × per-link peak, clamped to 0..1. An error when
// counters went backwards (reset) or no time passed.
Status NvlinkUtilization(const NvlinkThroughput& prev, const NvlinkThroughput& cur, int links,
                         double link_peak_bytes_per_s, double* out);

}  // namespace tidal::agent
