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
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
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

// Which task types accept a GPU model, found once per node rather than once per
// task (on a list where pods name models, comparing the model with every task's
// list was a quarter of the fgd plugin's time). Built once for a `tasks` list.
class TaskModelTable {
 public:
  explicit TaskModelTable(std::span<const FgdTask> tasks);
  // A flag per task, 1 where the task accepts `model` (ModelAccepted).
  std::span<const char> Accepted(const std::string& model) const;

 private:
  std::vector<std::pair<std::string, std::vector<char>>> by_model_;  // models the tasks name
  std::vector<char> unnamed_;  // any other model: only the tasks that accept any
};

// NodeFragmentation with the tasks' acceptance of the node's model given as
// `accepted` (TaskModelTable::Accepted for the same `tasks`); equal to the plain
// one above. The fgd plugin scores with TaskShareTable below; this plain sum is
// its oracle in the tests.
double NodeFragmentationAccepting(std::int64_t cpu_left, std::span<const char> accepted,
                                  std::span<const int> free, std::span<const FgdTask> tasks);

// The FGD paper's "typical pods": the pods' task types (CPU, GPU count, share,
// models) by popularity, the most popular first, cut where they cover
// `popularity_pct` of the pods, and re-normalised to sum to 1.
std::vector<FgdTask> TypicalTasks(std::span<const PodDemand> pods, double popularity_pct = 95);

// FGD's target workload learned from the pods a scheduler sees, since a running
// scheduler has no trace to read it from. Each pod counts for its task type; with
// a half-life, a pod seen `half_life_pods` pods before the newest counts half as
// much (0: no decay, plain counts, which is TypicalTasks). At most `max_types`
// task types are kept: a new one then replaces the lightest, so memory stays
// bounded whatever pods arrive.
class TaskTypeLearner {
 public:
  explicit TaskTypeLearner(double half_life_pods = 0,
                           std::size_t max_types = std::numeric_limits<std::size_t>::max());
  void Observe(const PodDemand& pod);
  // The heaviest task types covering `popularity_pct` of the weight, re-normalised
  // to sum to 1 (equal weights: the larger type first); empty before any pod.
  std::vector<FgdTask> Tasks(double popularity_pct = 95) const;
  std::uint64_t pods_seen() const { return pods_seen_; }
  std::size_t types() const { return types_.size(); }

 private:
  using Key = std::tuple<std::int64_t, int, int, std::string>;  // cpu, milli, gpus, models
  struct Learned {
    std::vector<std::string> models;
    double weight = 0;
  };
  void ForgetLightest();

  std::map<Key, Learned> types_;
  double growth_ = 1;       // a pod's weight over the one before it
  double next_weight_ = 1;  // the next pod's (the weights are rescaled before overflow)
  std::size_t max_types_;
  std::uint64_t pods_seen_ = 0;
};

// The nodes on which one pod of `task` fits now: the CPU it asks for is left, its
// GPU models accept the node's and enough GPUs each have its share free (a
// CPU-only task: the CPU alone).
std::size_t NodesFitting(const FgdTask& task, std::span<const NodeState* const> nodes);
// NodesFitting of every task, in one pass over the nodes (each node's state read
// once, not once per task: the passes were a relearning's cost on large clusters).
std::vector<std::size_t> NodesFittingEach(std::span<const FgdTask> tasks,
                                          std::span<const NodeState* const> nodes);

// The target workload weighed by scarcity: each task type's weight divided by
// (the nodes it fits on now)^exponent (at least one node), then re-normalised.
// FGD weighs a fragment by how often its task type arrives; a type that fits on
// a few nodes loses more when one of them is broken than a type that fits
// almost anywhere. 0: the weights unchanged.
std::vector<FgdTask> WeighByScarcity(std::vector<FgdTask> tasks,
                                     std::span<const NodeState* const> nodes, double exponent);

// The task types laid out so that a node's fragmentation costs a step per task,
// not one per task and GPU: the GPUs that fit each distinct per-GPU share are
// counted once per node (a learned workload keeps up to 256 types but few
// distinct shares, and FGD's filter measures a node once per GPU it could use).
// Fragmentation equals NodeFragmentationAccepting for the same tasks, to the
// bit: the same terms are added in the same order (fgd_test.cc checks it).
class TaskShareTable {
 public:
  explicit TaskShareTable(std::span<const FgdTask> tasks);
  double Fragmentation(std::int64_t cpu_left, std::span<const char> accepted,
                       std::span<const int> free) const;

 private:
  struct Task {
    std::int64_t cpu_milli;
    double weight;
    int gpus;
    int share;  // index into shares_; -1 for a CPU-only task
  };
  std::vector<Task> tasks_;
  std::vector<int> shares_;  // the distinct per-GPU shares, ascending
};

// A target workload ready to score with: its task types and which of them accept
// each GPU model.
// Which shares go together on one GPU (the fgd plugin's `fillPlan`): for each
// share (milli), the GPU fill levels (milli taken) at which it completes part of a
// planned way to fill a GPU.
class FillPlan {
 public:
  void Allow(int share, int used);
  // A way to fill one GPU (its shares): each may join a GPU at the fill levels
  // the others make.
  void AllowFilling(std::span<const int> shares);
  // Whether `share` on a GPU with `used` milli taken (> 0) follows the plan.
  bool Planned(int share, int used) const;
  bool empty() const { return shares_.empty(); }
  const std::vector<int>& shares() const { return shares_; }  // ascending
  std::vector<int> Levels(int share) const;                   // ascending
  // The plan for a GPU of `model`: the one set for it (SetForModel), else this.
  const FillPlan& For(const std::string& model) const;
  void SetForModel(const std::string& model, FillPlan plan);
  std::size_t models() const { return by_model_.size(); }

 private:
  std::vector<int> shares_;                 // ascending
  std::vector<std::vector<char>> planned_;  // per share, per used milli (0..1000)
  // Where the workload's task types name GPU models: a plan per named model of
  // the types it accepts (this plan holds those that accept any model).
  std::vector<std::pair<std::string, FillPlan>> by_model_;
};

// The weight of each share (milli, under a whole GPU) among a workload's sharing
// task types (one GPU each, weight > 0), by share.
std::map<int, double> SharingWeights(std::span<const FgdTask> tasks);

// A plan for a workload's sharing task types (one GPU, a share under a whole
// one): `pods` pods in the types' proportions packed largest first, each on the
// fullest GPU it fits (best-fit decreasing); each share may join a GPU at the fill
// levels the rest of a GPU it ended on makes. Empty without sharing types. Where
// types name GPU models, each named model gets the plan of the types it accepts,
// and this plan is that of the types that accept any model.
inline constexpr int kFillPlanPods = 2000;
FillPlan PlanFills(std::span<const FgdTask> tasks, int pods = kFillPlanPods);
// The task types each plan is for: first, model "", the types that name no GPU
// model (the plan for GPUs of any model not planned apart); then, for each model
// sharing types name, the types its GPUs take. At most kMaxPlannedModels models,
// those named by the most weight (a cluster has a handful of GPU models; pods
// naming more do not make more plans), in name order.
inline constexpr std::size_t kMaxPlannedModels = 16;
struct ModelTasks {
  std::string model;
  std::vector<FgdTask> tasks;
};
std::vector<ModelTasks> TasksByPlannedModel(std::span<const FgdTask> tasks);

struct TargetWorkload {
  explicit TargetWorkload(std::vector<FgdTask> task_types);
  std::vector<FgdTask> tasks;
  TaskModelTable models;  // built from `tasks`
  TaskShareTable shares;  // built from `tasks`
  // PlanFills(tasks) where the learner has made one (WorkloadLearner::Supply).
  std::shared_ptr<const FillPlan> fill_plan;
  // Every task: one whole GPU, no CPU, any model (FGD's default workload, under
  // which a pod that shares no GPU changes no node's fragmentation).
  bool one_whole_gpu = false;
};

// What the extender and the seed simulator learn with: a pod seen 1000 GPU pods
// before the newest counts half, at most 256 task types kept, and the heaviest
// types covering 99 % of the weight scored for (FGD's 95 % cut, measured on the
// openb lists in docs/traces.md, lost 0.2 points on the default list: a learned
// workload's rarer types are still worth keeping).
inline constexpr double kLearnedWorkloadHalfLifePods = 1000;
inline constexpr std::size_t kLearnedWorkloadMaxTypes = 256;
inline constexpr double kLearnedWorkloadPopularityPct = 99;
// ... and each type's weight divided by the square root of the nodes it fits on
// (WeighByScarcity; docs/traces.md measures 0, 0.25, 0.5 and 1).
inline constexpr double kLearnedWorkloadScarcityExponent = 0.5;

// The target workload a running scheduler learns from the GPU pods it sees (the
// fgd plugin's `tasks: learned`): a TaskTypeLearner with a half-life and a bound
// on the types kept, weighed by scarcity over the cluster last supplied, and
// published for concurrent readers. Observe is called by the pod watch (or a
// simulator), Supply with each new view of the nodes, Current by every scheduling
// cycle; the lock is held for one pod's learning, one re-weighing of the types or
// one pointer copy, never for work that grows with the cluster (the learned types
// are at most `max_types`; Supply counts the nodes outside the lock).
class WorkloadLearner {
 public:
  WorkloadLearner(double half_life_pods, std::size_t max_types, double popularity_pct,
                  double scarcity_exponent);
  // As the extender and the seed simulator learn (the constants above).
  WorkloadLearner()
      : WorkloadLearner(kLearnedWorkloadHalfLifePods, kLearnedWorkloadMaxTypes,
                        kLearnedWorkloadPopularityPct, kLearnedWorkloadScarcityExponent) {}
  // Learns one pod if Learns(pod).
  void Observe(const PodDemand& pod);
  // The cluster as it is now: each learned type's weight is divided by (the nodes
  // it fits on)^scarcity_exponent (WeighByScarcity). A type learned after the last
  // call counts as fitting every node until the next; before the first call the
  // weights are the popularity alone. Also plans how the weighed workload's shares
  // fill GPUs (PlanFills, TargetWorkload::fill_plan), outside the lock.
  void Supply(std::span<const NodeState* const> nodes);
  // Pods without GPUs are not part of the GPU workload (a cluster's many CPU pods
  // would dilute every GPU task type).
  static bool Learns(const PodDemand& pod) { return pod.gpu_count > 0; }
  // What is learned so far; null before the first GPU pod.
  std::shared_ptr<const TargetWorkload> Current() const;
  std::uint64_t pods_seen() const;
  // Whether the scheduler's GPU choice is what the nodes give: true once a pod's
  // GPUs were given out as the scheduler named them (the extender: a bound pod
  // carrying tidal.io/gpus-allocated, written by Tidal's device plugin; the seed
  // simulator: its model of that plugin). It never turns false again: a cluster
  // does not stop running its device plugin between two pods.
  void NoteGpuChoiceCarriedOut() { carried_out_.store(true, std::memory_order_relaxed); }
  bool GpuChoiceCarriedOut() const { return carried_out_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> carried_out_{false};
  mutable std::mutex mu_;
  using TaskKey = std::tuple<std::int64_t, int, int, std::vector<std::string>>;
  static TaskKey KeyOf(const FgdTask& task);
  // current_ from the learned types and supply_ (with mu_ held).
  void Publish();

  TaskTypeLearner learner_;
  double popularity_pct_;
  double scarcity_exponent_;
  std::map<TaskKey, std::size_t> supply_;  // nodes fitting each type, at the last Supply
  std::size_t supplied_nodes_ = 0;         // the nodes at the last Supply
  bool supplied_ = false;
  std::shared_ptr<const TargetWorkload> current_;
  std::shared_ptr<const FillPlan> fill_plan_;  // of the tasks at the last Supply
};

}  // namespace tidal
