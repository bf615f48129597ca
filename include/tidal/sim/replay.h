#pragma once
// Time-based replay of a whole-GPU job trace (Philly): jobs arrive at their
// submit times, wait in their virtual cluster's queue until a policy places them,
// and hold their GPUs for their durations. Event-driven (arrivals, completions,
// scheduling cycles), ordered by time then insertion, so a run is reproducible.
// Placement is the same Runner-over-plugins code as the fgd-inflation experiment.
#include <cstdint>
#include <string>
#include <vector>

#include "tidal/sim/traces/traces.h"

namespace tidal::sim {

struct ReplayJob {
  std::string id;
  double submit_s = 0;
  double duration_s = 0;  // at full speed
  int gpus = 0;
  std::string vc;
};

struct ReplayVc {
  std::string name;
  int nodes = 0;
};

struct ReplayOptions {
  int gpus_per_node = 8;  // Philly's VC table counts nodes; Helios assumes 8 GPUs each
  // The runtime model's factor for an NVLink job on GPUs that are not pairwise
  // NVLinked (docs/simulator.md): here a job spread over several nodes.
  double multi_node_slowdown = 1.5;
  double util_bucket_s = 86'400;  // GPU utilisation is reported per bucket
  std::uint64_t seed = 42;        // ties between equal scores, and the random policy
  bool cache_by_shape = true;     // re-score only nodes changed since a same-sized pod
};

struct ReplayStats {
  double mean = 0, p50 = 0, p99 = 0;  // nearest rank; 0 when empty
};
ReplayStats Summarise(std::vector<double> values);

struct ReplayVcResult {
  std::string name;
  int gpus = 0;
  int completed = 0;
  std::vector<double> queue_s;  // per completed job of this VC
  double util_mean = 0;         // over the whole run's makespan
};

struct ReplayResult {
  std::string policy;
  int jobs = 0;  // in the trace
  int completed = 0;
  int skipped_no_vc = 0;    // the job's VC is not in the VC table
  int skipped_too_big = 0;  // more GPUs than its VC has
  int multi_node = 0;       // jobs that ran on more than one node
  int total_gpus = 0;
  std::vector<double> queue_s;      // per completed job (in trace order): start − submit
  std::vector<double> jct_s;        // per completed job: completion − submit
  double makespan_s = 0;            // first submit to last completion
  double util_mean = 0;             // time-weighted allocated GPU share over the makespan
  std::vector<double> util;         // allocated GPU share per bucket of util_bucket_s
  std::vector<ReplayVcResult> vcs;  // in VC-table order
  std::uint64_t events = 0;
  std::uint64_t node_evaluations = 0;  // (pod, node) pairs the policy scored
};

// The policies: random, dot-prod, gpu-clustering, gpu-packing, best-fit-milli, fgd,
// load-aware-spread, load-aware-pack (as in fgd-inflation).
const std::vector<std::string>& ReplayPolicyNames();

// Throws InputError on an unknown policy or an empty VC table.
ReplayResult Replay(const std::vector<ReplayVc>& vcs, const std::vector<ReplayJob>& jobs,
                    const std::string& policy, const ReplayOptions& options = {});

std::vector<ReplayJob> FromPhilly(const std::vector<traces::PhillyJob>& jobs);
std::vector<ReplayVc> FromPhilly(const std::vector<traces::PhillyVc>& vcs);

// Deterministic text (fixed decimals, fixed key order). `events_per_s` (one per
// result, measured by the caller) is printed when given.
std::string RenderReplayJson(const std::vector<ReplayResult>& results,
                             const std::vector<double>& events_per_s = {});
std::string RenderReplayTable(const std::vector<ReplayResult>& results,
                              const std::vector<double>& events_per_s = {});

}  // namespace tidal::sim
