#pragma once
// Loaders for the public GPU-cluster traces (docs/traces.md): each takes a parsed
// CSV and returns the whole table, or throws InputError listing the bad fields as
// file:line:column. Nothing half-loaded is returned.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidal/sim/spec.h"
#include "tidal/sim/traces/csv.h"

namespace tidal::sim::traces {

inline constexpr int kMilliPerGpu = 1000;

// ---- openb (Alibaba cluster-trace-gpu-v2023, the FGD paper's trace) ----

struct OpenbNode {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;  // empty for CPU-only nodes
};

struct OpenbPod {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int gpus = 0;       // num_gpu
  int gpu_milli = 0;  // per GPU, 1..1000; 0 for CPU-only pods
  // gpu_spec: the GPU models the pod accepts; empty: any. The 5-column
  // (multigpu) lists have no such column and no times.
  std::vector<std::string> gpu_models;
  std::string qos, phase;
  std::optional<std::int64_t> creation_s, deletion_s, scheduled_s;
  std::int64_t TotalMilli() const { return static_cast<std::int64_t>(gpus) * gpu_milli; }
};

std::vector<OpenbNode> LoadOpenbNodes(const Csv& csv);
std::vector<OpenbPod> LoadOpenbPods(const Csv& csv);

// ---- Philly (Microsoft, via the Pollux artifact) ----

struct PhillyJob {
  int line = 0;               // in the file, for messages and stable ties
  std::int64_t submit_s = 0;  // seconds since 1970-01-01 of the local wall-clock time
  double duration_s = 0;
  int gpus = 0;
  std::string vc;
};

// Sorted by submit time (the file is not), ties in file order.
std::vector<PhillyJob> LoadPhillyJobs(const Csv& csv);

struct PhillyVc {
  std::string name;
  int nodes = 0;
};
std::vector<PhillyVc> LoadPhillyVcs(const Csv& csv);

// "YYYY-MM-DD HH:MM:SS" as seconds since 1970-01-01 (no zone); false if malformed.
bool ParseDateTime(std::string_view text, std::int64_t* seconds);

// ---- Alibaba GenAI 2026: per-pod GPU memory and duty-cycle series ----

struct UsageSample {
  double t_s = 0;  // anonymised epoch seconds
  double value = 0;
};

struct PodUsage {
  std::string pod;                  // container_ip (hashed)
  std::vector<UsageSample> memory;  // bytes, sorted by time
  std::vector<UsageSample> duty;    // percent 0..100, sorted by time; may be empty
};

// Joins the two files on container_ip; the column order differs between them and
// is read from each header. Pods in order of their first memory sample.
std::vector<PodUsage> LoadGenaiUsage(const Csv& memory, const Csv& duty);

// ---- Alibaba DLRM 2025 (GPU-disaggregated inference instances) ----

struct DlrmInstance {
  std::string name;
  bool gpu_node = false;  // role HN (heterogeneous GPU node) or CN (CPU node)
  std::string app;
  double cpu = 0;  // vCPUs
  int gpus = 0;
  int rdma_pct = 0;
  double memory_gib = 0;
  double disk_gib = 0;
  int max_per_node = -1;                                      // -1: no limit
  std::optional<double> creation_s, scheduled_s, deletion_s;  // empty: outside the window
};
std::vector<DlrmInstance> LoadDlrm(const Csv& csv);

// ---- node lists used as cluster shapes (PAI 2020, spot 2026) ----

struct ShapeNode {
  std::string name;
  std::string gpu_model;  // empty: CPU-only
  int gpus = 0;
  std::int64_t cpu_milli = 0;
  std::optional<std::int64_t> memory_mib;  // the spot list has none
};
std::vector<ShapeNode> LoadPaiMachines(const Csv& csv);
std::vector<ShapeNode> LoadSpotNodes(const Csv& csv);

// GPU memory by model name, for node lists that give only the model; nullopt
// for undisclosed models (G1, GPU-series-1, MISC …).
std::optional<Bytes> GpuMemoryOfModel(std::string_view model);

// A simulator cluster from a shape list (PCIe only: the lists have no topology).
// Undisclosed models get `unknown_gpu_memory`.
ClusterSpec ToClusterSpec(const std::vector<ShapeNode>& nodes, const std::string& name,
                          Bytes unknown_gpu_memory = Bytes{32} << 30);
ClusterSpec ToClusterSpec(const std::vector<OpenbNode>& nodes, const std::string& name,
                          Bytes unknown_gpu_memory = Bytes{32} << 30);

// ---- the FGD paper's published results (openb/fgd_expected/fgd_summary.csv) ----

struct FgdExpected {
  std::string workload;  // e.g. openb_pod_list_default
  std::string policy;    // e.g. 06-FGD
  int arrived_pct = 0;
  int seeds = 0;
  double alloc_pct_mean = 0, alloc_pct_sd = 0, unalloc_pct_mean = 0;
  double frag_amount_pct_mean = 0, frag_ratio_pct_mean = 0;
};
std::vector<FgdExpected> LoadFgdSummary(const Csv& csv);

}  // namespace tidal::sim::traces
