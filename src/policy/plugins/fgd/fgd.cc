#include "policy/plugins/fgd/fgd.h"

#include <algorithm>
#include <cmath>

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

double NodeFragmentation(const NodeState& node, std::span<const FgdTask> tasks) {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.gpus.size();
  for (std::size_t i = 0; i < n; ++i) free[i] = node.gpus[i].milli_free;
  return NodeFragmentation(CpuLeft(node), NodeGpuModel(node), std::span<const int>(free, n), tasks);
}

Fgd::Fgd(FgdArgs args) : args_(std::move(args)), configured_(args_.tasks) {}

bool Fgd::SkipsScore(const CycleState& cycle) const {
  if (Idle(cycle)) return true;
  return WorkloadOf(cycle).one_whole_gpu && args_.tie_break == FgdTieBreak::kNone &&
         !SharesGpu(*cycle.pod);
}

double Fgd::Fragmentation(const NodeState& node, const TargetWorkload& workload) {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.gpus.size();
  for (std::size_t i = 0; i < n; ++i) free[i] = node.gpus[i].milli_free;
  return NodeFragmentationAccepting(CpuLeft(node), workload.models.Accepted(NodeGpuModel(node)),
                                    std::span<const int>(free, n), workload.tasks);
}

namespace {
double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

double Fgd::ScoreFor(const PodDemand& pod, const NodeState& node, GpuSet gpus, double before,
                     const TargetWorkload& workload) const {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.gpus.size();
  for (std::size_t i = 0; i < n; ++i)
    free[i] = node.gpus[i].milli_free - (gpus.Has(static_cast<int>(i)) ? pod.gpu_milli : 0);
  const double after = NodeFragmentationAccepting(CpuLeft(node) - pod.cpu_milli,
                                                  workload.models.Accepted(NodeGpuModel(node)),
                                                  std::span<const int>(free, n), workload.tasks);
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
  const double before = Fragmentation(node, workload);
  int best = -1;
  double best_score = 0;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].milli_free < pod.gpu_milli) continue;
    const double s = ScoreFor(pod, node, GpuSet(std::uint64_t{1} << i), before, workload);
    if (best < 0 || s > best_score) {
      best = static_cast<int>(i);
      best_score = s;
    }
  }
  if (best < 0)
    return Status::Unfit("no GPU with " + std::to_string(pod.gpu_milli) + " milli-GPU free");
  scratch.gpus = GpuSet(std::uint64_t{1} << best);
  scratch.placed = true;
  return Status::Fits();
}

double Fgd::ScoreOne(const CycleState& cycle, const NodeState& node,
                     const NodeScratch& scratch) const {
  const PodDemand& pod = *cycle.pod;
  if (Idle(cycle)) return 50;  // skipped (SkipsScore): not part of the mean
  if (node.gpus.empty() && pod.gpu_count > 0) return 50;  // no GPU known: nothing to say
  GpuSet gpus = scratch.placed ? scratch.gpus : PickGpus(node, pod, GpuPick::kBestFit);
  const TargetWorkload& workload = WorkloadOf(cycle);
  return ScoreFor(pod, node, gpus, Fragmentation(node, workload), workload);
}

std::unique_ptr<Plugin> NewFgd(const YAML::Node& args, const std::string& path,
                               ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<Fgd, FgdArgs>(args, path, errors);
}

}  // namespace tidal
