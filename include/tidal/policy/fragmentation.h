#pragma once
// FGD's fragmentation measure (Weng et al., USENIX ATC'23), public so that the
// fgd plugin scores with it and the simulators report it with the same code. A
// node's fragmentation for a target workload M is the expected amount of its free
// GPU share that a task drawn from M could not use:
//   F_n(M) = Σ_m p_m · F_n(m), where F_n(m) is all of n's free milli-GPU when m
//   cannot run on n at all (CPU-only task, wrong GPU model, too little CPU, too few
//   fitting GPUs), and otherwise the free share of the GPUs that each have less
//   than m's per-GPU request.
// Implemented in src/policy/plugins/fgd/ (fgd.cc, fgd_args.cc).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tidal/core/types.h"

namespace tidal {

// One task type of the target workload and its share of the pods (the fgd
// plugin's `tasks` args: cpuMilli, gpus, gpuMilli, models, weight).
struct FgdTask {
  std::int64_t cpu_milli = 0;
  int gpus = 0;
  int gpu_milli = 0;                // per GPU; 0 for CPU-only tasks
  std::vector<std::string> models;  // accepted GPU models; empty: any
  double weight = 0;                // popularity, the weights sum to 1
};

// F_n(M) in milli-GPU for a node with `cpu_left`, GPUs of `model` and free shares `free`.
double NodeFragmentation(std::int64_t cpu_left, const std::string& model, std::span<const int> free,
                         std::span<const FgdTask> tasks);
double NodeFragmentation(const NodeState& node, std::span<const FgdTask> tasks);

// The FGD paper's "typical pods": the pods' task types (CPU, GPU count, share,
// models) by popularity, the most popular first, cut where they cover
// `popularity_pct` of the pods, and re-normalised to sum to 1.
std::vector<FgdTask> TypicalTasks(std::span<const PodDemand> pods, double popularity_pct = 95);

}  // namespace tidal
