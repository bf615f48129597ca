#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "tidal/policy/config.h"
#include "tidal/policy/fragmentation.h"
#include "tidal/policy/milli_gpu.h"

namespace tidal {

// How nodes of equal FGD score are ordered: `none` leaves them equal (the paper's
// FGD: the scheduler's tie order decides); `pack` ranks them by how much of the
// node's GPU share is allocated once the pod is placed, fullest first.
enum class FgdTieBreak { kNone, kPack };

struct FgdArgs {
  // The target workload; with `learned`, what is used until the scheduler has
  // learned one (CycleState::workload).
  std::vector<FgdTask> tasks;
  // `tasks: learned`: the target workload is the one the scheduler learns from the
  // GPU pods it sees (WorkloadLearner), not a list in the config.
  bool learned = false;
  FgdTieBreak tie_break = FgdTieBreak::kNone;
  // Filter and score only once the nodes are seen to give pods the GPUs the
  // scheduler chose (CycleState::gpu_choice_carried_out: Tidal's device plugin
  // runs); before that the plugin passes every node and skips every pod. Packing
  // pods onto partly used GPUs is only safe where the chosen GPU is the one given.
  bool only_with_tidal_device_plugin = false;
  // The truncated score rounded down to a multiple of this: 1 is the paper's
  // FGD; more leaves more equal scores to the scheduler's tie order.
  int score_step = 1;
  // The same for pods of whole GPUs (one or more); `score_step` then applies to
  // sharing and CPU-only pods. 0: `score_step` for every pod.
  int whole_gpu_score_step = 0;
  // Sharing pods go first to a GPU where the plan places their share, then to an
  // empty GPU, then elsewhere; FGD's score orders GPUs and nodes within each.
  FillPlan fill_plan = {};
  // `fillPlan: workload`: the plan is PlanFills of the target workload (the
  // configured tasks, or the learned workload's TargetWorkload::fill_plan).
  bool fill_plan_of_workload = false;
  // The step of `pod`'s score.
  int StepFor(const PodDemand& pod) const {
    const bool whole = pod.gpu_count > 0 && !SharesGpu(pod);
    return whole && whole_gpu_score_step > 0 ? whole_gpu_score_step : score_step;
  }

  static FgdArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
