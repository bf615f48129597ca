#pragma once
// Cluster and workload descriptions for the simulator (YAML files or built-ins).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidal/core/types.h"

namespace tidal::sim {

struct DiskSpec {
  std::string name = "nvme0n1";
  double base_await_ms = 2.0;  // service time of an idle disk
  // A disk that degrades (a failing drive, a noisy neighbour on shared storage):
  // from `degrade_at_ms` on, its idle service time is `degraded_await_ms`. -1: never.
  TimeMs degrade_at_ms = -1;
  double degraded_await_ms = 0;
};

struct NodeSpec {
  std::string name;
  Labels labels;
  std::int64_t cpu_milli = 32'000;
  Bytes memory = Bytes{256} << 30;
  std::string gpu_model = "A10";
  Bytes gpu_memory = Bytes{24} << 30;
  int gpu_count = 4;
  int replicas_per_gpu = 1;  // time-slicing: the device plugin advertises this many per GPU
  // links[i][j]: NVLink links between GPU i and j (0: PCIe only).
  std::vector<std::vector<int>> links;
  // NVLink jobs one NVLinked GPU's links serve at full speed (topology
  // `slotsPerGpu`). A property of the hardware: the policy config's
  // nvlink.slotsPerGpu is what Tidal assumes, and may be wrong.
  int nvlink_slots_per_gpu = 2;
  // An NVLink job on GPUs without NVLink between them talks over PCIe: this
  // many times slower, and the node's PCIe fabric serves `pcie_nvlink_jobs` such
  // jobs at that speed (more share it).
  double pcie_nvlink_slowdown = 1.5;
  int pcie_nvlink_jobs = 2;
  DiskSpec disk;
};

// The most nodes a cluster file may describe (the largest public trace has ~6 500).
inline constexpr std::size_t kMaxClusterNodes = 20'000;

struct ClusterSpec {
  std::string name;
  std::vector<NodeSpec> nodes;
};

struct Range {
  double lo = 0, hi = 0;
};

struct TaskClass {
  std::string name;
  int count = 0;
  // Arrivals: `burst` spreads `count` arrivals uniformly over [start, start + window);
  // `poisson` draws exponential gaps of mean `meanGap` from `start`.
  std::string arrival = "burst";
  TimeMs arrival_start_ms = 0;
  TimeMs arrival_window_ms = 60'000;
  TimeMs mean_gap_ms = 60'000;
  int gpus = 1;
  LoadType load_type = LoadType::kUnspecified;
  std::string image = "pytorch/pytorch:2.1";
  std::optional<Bytes> declared_memory;     // ai.gpu-memory per GPU; none: Tidal estimates
  Bytes memory_context = Bytes{600} << 20;  // CUDA context, allocated at start
  Range memory_peak;                        // bytes per GPU, drawn per task
  Range ramp_seconds{30, 90};               // context → peak
  // Instead of the ramp, each task follows one of the workload's memory profiles
  // (drawn per task): memory = max(context, profile(t) × peak).
  bool memory_profiles = false;
  bool uses_nvlink = false;           // multi-GPU job that talks over NVLink
  bool nvlink_required = false;       // ai.nvlink-required: "true"
  double compute_duty = 0.9;          // share of a GPU's compute it keeps busy alone
  double io_intensity = 0.0;          // share of its disk's capacity it drives alone
  double io_bound = 0.0;              // share of its time that waits on storage
  Range duration_seconds{600, 1200};  // at full speed
  std::int64_t cpu_milli = 4'000;
  Bytes memory_request = Bytes{16} << 30;
  TimeMs startup_ms = 30'000;  // image pull and container start
  // Rebalancing (docs/rebalance.md): tidal.io/migratable and the checkpoint
  // interval (of work done); a moved task resumes from its last checkpoint.
  bool migratable = false;
  std::optional<TimeMs> checkpoint_ms;
  // What the pod declares to the rebalancer, as a user would (not the drawn
  // truth): tidal.io/expected-duration and tidal.io/io-share.
  std::optional<TimeMs> expected_duration_ms;
  std::optional<double> declared_io_share;
};

// A real GPU-memory time series, as a share of its own peak (0..1) every
// `step_s` seconds from the pod's first sample; it repeats past its end.
struct MemoryProfile {
  std::string name;
  double step_s = 60;
  std::vector<double> share;
  double At(double t_s) const;  // linear between samples
};

struct WorkloadSpec {
  std::string name;
  std::vector<TaskClass> classes;
  std::vector<MemoryProfile> profiles;
};

// `memoryProfiles:` of a workload file, inline:
//   {source: TEXT, stepSeconds: N, profiles: [{name: ID, share: [0.8, …]}, …]}
std::vector<MemoryProfile> LoadMemoryProfiles(const YAML::Node& node, const std::string& origin);

// Throw InputError with every problem and its path.
ClusterSpec LoadClusterSpec(const YAML::Node& root, const std::string& origin);
ClusterSpec LoadClusterFile(const std::string& path);
WorkloadSpec LoadWorkloadSpec(const YAML::Node& root, const std::string& origin);
// A file path, or builtin:NAME.
WorkloadSpec LoadWorkload(const std::string& ref);
ClusterSpec LoadCluster(const std::string& ref);

// The embedded default scenario and cluster (the same text as the files under
// examples/, so the README's command works from any directory).
const char* BuiltinWorkloadYaml(const std::string& name);  // null if unknown
const char* BuiltinClusterYaml(const std::string& name);
// Files a built-in workload refers to (memoryProfiles: genai-profiles.yaml).
const char* BuiltinProfilesYaml(const std::string& file);

}  // namespace tidal::sim
