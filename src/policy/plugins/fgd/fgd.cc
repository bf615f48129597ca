#include "policy/plugins/fgd/fgd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "tidal/policy/milli_gpu.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

namespace {

// F_n(M) with `accepts(i)` telling whether task i accepts the node's GPU model.
template <class Accepts>
double Fragmentation(std::int64_t cpu_left, Accepts accepts, std::span<const int> free,
                     std::span<const FgdTask> tasks) {
  std::int64_t idle = 0;
  for (int f : free) idle += f;
  if (idle == 0) return 0;
  double frag = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const FgdTask& t = tasks[i];
    // A CPU-only task uses no GPU: to it, every free GPU share is a fragment.
    if (t.gpus == 0 || !accepts(i) || cpu_left < t.cpu_milli) {
      frag += t.weight * static_cast<double>(idle);
      continue;
    }
    int fitting = 0;
    std::int64_t small = 0;
    for (int f : free) {
      if (f >= t.gpu_milli)
        ++fitting;
      else
        small += f;
    }
    frag += t.weight * static_cast<double>(fitting >= t.gpus ? small : idle);
  }
  return frag;
}

}  // namespace

// FGD's measure (tidal/policy/fragmentation.h), defined in the plugin's translation
// unit so that its batch loops (flatten) inline it into Fgd's filter and score.
double NodeFragmentation(std::int64_t cpu_left, const std::string& model, std::span<const int> free,
                         std::span<const FgdTask> tasks) {
  return Fragmentation(
      cpu_left, [&](std::size_t i) { return ModelAccepted(tasks[i].models, model); }, free, tasks);
}

double NodeFragmentationAccepting(std::int64_t cpu_left, std::span<const char> accepted,
                                  std::span<const int> free, std::span<const FgdTask> tasks) {
  return Fragmentation(
      cpu_left, [&](std::size_t i) { return accepted[i] != 0; }, free, tasks);
}

TaskModelTable::TaskModelTable(std::span<const FgdTask> tasks) {
  unnamed_.resize(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    unnamed_[i] = tasks[i].models.empty();
    for (const std::string& m : tasks[i].models)
      if (std::none_of(by_model_.begin(), by_model_.end(),
                       [&](const auto& entry) { return entry.first == m; }))
        by_model_.emplace_back(m, std::vector<char>());
  }
  for (auto& [model, accepted] : by_model_) {
    accepted.resize(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i)
      accepted[i] = ModelAccepted(tasks[i].models, model);
  }
}

std::span<const char> TaskModelTable::Accepted(const std::string& model) const {
  for (const auto& [m, accepted] : by_model_)
    if (m == model) return accepted;
  return unnamed_;
}

namespace {
// The distinct shares whose fitting GPUs are counted up front; a table with more
// (only a configured workload could have them) counts the rest per task.
constexpr std::size_t kCountedShares = 256;
}  // namespace

TaskShareTable::TaskShareTable(std::span<const FgdTask> tasks) {
  for (const FgdTask& t : tasks)
    if (t.gpus != 0) shares_.push_back(t.gpu_milli);
  std::sort(shares_.begin(), shares_.end());
  shares_.erase(std::unique(shares_.begin(), shares_.end()), shares_.end());
  tasks_.reserve(tasks.size());
  for (const FgdTask& t : tasks) {
    const auto at = std::lower_bound(shares_.begin(), shares_.end(), t.gpu_milli);
    tasks_.push_back(
        {t.cpu_milli, t.weight, t.gpus, t.gpus == 0 ? -1 : static_cast<int>(at - shares_.begin())});
  }
}

double TaskShareTable::Fragmentation(std::int64_t cpu_left, std::span<const char> accepted,
                                     std::span<const int> free) const {
  const std::size_t g = std::min<std::size_t>(free.size(), kMaxGpusPerNode);
  int sorted[kMaxGpusPerNode];
  std::int64_t idle = 0;
  for (std::size_t i = 0; i < g; ++i) idle += sorted[i] = free[i];
  if (idle == 0) return 0;
  std::sort(sorted, sorted + g, std::greater<>());
  // largest[j]: the free share of the j GPUs with the most free.
  std::int64_t largest[kMaxGpusPerNode + 1] = {0};
  for (std::size_t j = 0; j < g; ++j) largest[j + 1] = largest[j] + sorted[j];
  auto count_fitting = [&](int share) {
    std::size_t j = 0;
    while (j < g && sorted[j] >= share) ++j;
    return j;
  };
  // fitting[s]: the GPUs with at least shares_[s] free (fewer as the share grows).
  std::uint8_t fitting[kCountedShares];
  const std::size_t counted = std::min(shares_.size(), kCountedShares);
  for (std::size_t s = 0, j = g; s < counted; ++s) {
    while (j > 0 && sorted[j - 1] < shares_[s]) --j;
    fitting[s] = static_cast<std::uint8_t>(j);
  }
  double frag = 0;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (t.share < 0 || !accepted[i] || cpu_left < t.cpu_milli) {
      frag += t.weight * static_cast<double>(idle);
      continue;
    }
    const auto share = static_cast<std::size_t>(t.share);
    const std::size_t fit = share < counted ? fitting[share] : count_fitting(shares_[share]);
    // The GPUs that fit are the `fit` with the most free; the rest is the fragment.
    const std::int64_t small = idle - largest[fit];
    frag += t.weight * static_cast<double>(fit >= static_cast<std::size_t>(t.gpus) ? small : idle);
  }
  return frag;
}

double NodeFragmentation(const NodeState& node, std::span<const FgdTask> tasks) {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  return NodeFragmentation(CpuLeft(node), NodeGpuModel(node), std::span<const int>(free, n), tasks);
}

Fgd::Fgd(FgdArgs args)
    : args_(std::move(args)),
      configured_(args_.tasks),
      plan_(args_.fill_plan_of_workload ? PlanFills(args_.tasks) : args_.fill_plan) {}

const FillPlan& Fgd::PlanOf(const CycleState& cycle, const NodeState& node) const {
  if (args_.fill_plan_of_workload && args_.learned && cycle.workload && cycle.workload->fill_plan)
    return cycle.workload->fill_plan->For(NodeGpuModel(node));
  return plan_.For(NodeGpuModel(node));
}

bool Fgd::SkipsScore(const CycleState& cycle) const {
  if (Idle(cycle)) return true;
  return WorkloadOf(cycle).one_whole_gpu && args_.tie_break == FgdTieBreak::kNone &&
         !SharesGpu(*cycle.pod);
}

double Fgd::Fragmentation(const NodeState& node, const TargetWorkload& workload) {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  return workload.shares.Fragmentation(CpuLeft(node), workload.models.Accepted(NodeGpuModel(node)),
                                       std::span<const int>(free, n));
}

namespace {
double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

double Fgd::ScoreFor(const PodDemand& pod, const NodeState& node, GpuSet gpus, double before,
                     const TargetWorkload& workload) const {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  for (std::size_t i = 0; i < n; ++i) free[i] -= gpus.Has(static_cast<int>(i)) ? pod.gpu_milli : 0;
  const double after = workload.shares.Fragmentation(CpuLeft(node) - pod.cpu_milli,
                                                     workload.models.Accepted(NodeGpuModel(node)),
                                                     std::span<const int>(free, n));
  const double truncated = std::trunc(100.0 * Sigmoid((before - after) / 1000.0));
  const int step = args_.StepFor(pod);
  const double score = std::floor(truncated / step) * step;
  if (args_.tie_break == FgdTieBreak::kNone || n == 0) return score;
  // pack: the share of the node's GPUs allocated after the placement, in [0, 0.99],
  // added below the truncated score's unit, so it orders equal scores only
  // (the truncated score is at most 99: the score stays within 0..100).
  std::int64_t idle = 0;
  for (std::size_t i = 0; i < n; ++i) idle += free[i];
  const double allocated =
      1.0 - static_cast<double>(idle) / (static_cast<double>(n) * kMilliPerGpu);
  return std::min(100.0, score + 0.99 * std::clamp(allocated, 0.0, 1.0));
}

Status Fgd::FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const {
  const PodDemand& pod = *cycle.pod;
  if (pod.gpu_count <= 0 || Idle(cycle)) return Status::Fits();
  // No GPU known here (a node without metrics in the extender): whether the pod
  // fits is for the fit plugins (gpufit, milligpu) to judge, not the measure.
  if (node.gpus.empty()) return Status::Fits();
  if (!SharesGpu(pod)) {
    if (!scratch.placed) {
      const GpuSet g = PickGpus(node, pod, GpuPick::kBestFit);
      if (g.Empty()) return Status::Unfit("not enough free GPUs");
      scratch.gpus = g;
      scratch.placed = true;
    }
    return Status::Fits();
  }
  const TargetWorkload& workload = WorkloadOf(cycle);
  const FillPlan& plan = PlanOf(cycle, node);
  const double before = Fragmentation(node, workload);
  int best = -1;
  double best_score = 0;
  // GPUs with the same free share leave the node alike: the first of them is
  // scored and the others would tie with it (the first wins ties).
  int scored_free[kMaxGpusPerNode];
  std::size_t scored = 0;
  int milli_free[kMaxGpusPerNode];
  const std::size_t gpu_count = node.MilliFree(milli_free);
  for (std::size_t i = 0; i < gpu_count; ++i) {
    const int free = milli_free[i];
    if (free < pod.gpu_milli ||
        std::find(scored_free, scored_free + scored, free) != scored_free + scored)
      continue;
    scored_free[scored++] = free;
    const double s = FollowingPlan(
        plan, pod, free, ScoreFor(pod, node, GpuSet(std::uint64_t{1} << i), before, workload));
    if (best < 0 || s > best_score) {
      best = static_cast<int>(i);
      best_score = s;
    }
  }
  if (best < 0)
    return Status::Unfit("no GPU with " + std::to_string(pod.gpu_milli) + " milli-GPU free");
  scratch.gpus = GpuSet(std::uint64_t{1} << best);
  scratch.placed = true;
  scratch.scored_by = this;
  scratch.scored_gpus = scratch.gpus;
  scratch.placer_score = best_score;
  return Status::Fits();
}

double Fgd::ScoreOne(const CycleState& cycle, const NodeState& node,
                     const NodeScratch& scratch) const {
  const PodDemand& pod = *cycle.pod;
  if (Idle(cycle)) return 50;  // skipped (SkipsScore): not part of the mean
  if (node.gpus.empty() && pod.gpu_count > 0) return 50;  // no GPU known: nothing to say
  GpuSet gpus = scratch.placed ? scratch.gpus : PickGpus(node, pod, GpuPick::kBestFit);
  // The filter scored these GPUs for this pod already.
  if (scratch.scored_by == this && gpus == scratch.scored_gpus) return scratch.placer_score;
  const TargetWorkload& workload = WorkloadOf(cycle);
  const double score = ScoreFor(pod, node, gpus, Fragmentation(node, workload), workload);
  if (!SharesGpu(pod) || gpus.Count() != 1) return score;
  int milli_free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(milli_free);
  for (std::size_t i = 0; i < n; ++i)
    if (gpus.Has(static_cast<int>(i)))
      return FollowingPlan(PlanOf(cycle, node), pod, milli_free[i], score);
  return score;
}

double Fgd::FollowingPlan(const FillPlan& plan, const PodDemand& pod, int gpu_free, double score) {
  if (plan.empty()) return score;
  const int used = kMilliPerGpu - gpu_free;
  const int rank = used == 0 ? 1 : (plan.Planned(pod.gpu_milli, used) ? 2 : 0);
  // Three bands of 0..32 (the score's 0..100 scaled), 34 apart: at most 100.
  return rank * 34 + score * 0.32;
}

std::unique_ptr<Plugin> NewFgd(const YAML::Node& args, const std::string& path,
                               ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<Fgd, FgdArgs>(args, path, errors);
}

}  // namespace tidal
