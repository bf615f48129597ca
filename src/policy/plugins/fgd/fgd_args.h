#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/policy/config.h"

namespace tidal {

// One task type of the target workload and its share of the pods.
struct FgdTask {
  std::int64_t cpu_milli = 0;
  int gpus = 0;
  int gpu_milli = 0;                // per GPU; 0 for CPU-only tasks
  std::vector<std::string> models;  // accepted GPU models; empty: any
  double weight = 0;                // popularity, the weights sum to 1
};

// How nodes of equal FGD score are ordered: `none` leaves them equal (the paper's
// FGD: the scheduler's tie order decides); `pack` ranks them by how much of the
// node's GPU share is allocated once the pod is placed, fullest first.
enum class FgdTieBreak { kNone, kPack };

struct FgdArgs {
  std::vector<FgdTask> tasks;
  FgdTieBreak tie_break = FgdTieBreak::kNone;

  static FgdArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

// The FGD paper's "typical pods": the pods' task types (CPU, GPU count, share,
// models) by popularity, the most popular first, cut where they cover
// `popularity_pct` of the pods, and re-normalised to sum to 1.
std::vector<FgdTask> TypicalTasks(std::span<const PodDemand> pods, double popularity_pct = 95);

}  // namespace tidal
