#pragma once
// fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23). A node's
// fragmentation for a target workload M is the expected amount of its free GPU
// share that a task drawn from M could not use:
//   F_n(M) = Σ_m p_m · F_n(m), where F_n(m) is all of n's free milli-GPU when m
//   cannot run on n at all (CPU-only task, wrong GPU model, too little CPU, too few
//   fitting GPUs), and otherwise the free share of the GPUs that each have less
//   than m's per-GPU request.
// FGD places a pod where F grows least: score = trunc(100 · sigmoid((F_before −
// F_after) / 1000)); a sharing pod gets the GPU that gives the best score.
#include <memory>
#include <span>

#include "policy/plugins/fgd/fgd_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

// F_n(M) in milli-GPU for a node with `cpu_left`, GPUs of `model` and free shares `free`.
double NodeFragmentation(std::int64_t cpu_left, const std::string& model, std::span<const int> free,
                         std::span<const FgdTask> tasks);
double NodeFragmentation(const NodeState& node, std::span<const FgdTask> tasks);

class Fgd final : public FilterEachNode<Fgd>, public ScoreEachNode<Fgd> {
 public:
  explicit Fgd(FgdArgs args) : args_(std::move(args)) {}
  std::string_view Name() const override { return "fgd"; }
  // Rejects a node where the pod's GPUs do not fit; for a sharing pod, chooses the
  // GPU that raises fragmentation least (first on ties).
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // The score of placing the pod on `gpus` of the node.
  double ScoreFor(const PodDemand& pod, const NodeState& node, GpuSet gpus, double before) const;
  const FgdArgs& args() const { return args_; }

 private:
  FgdArgs args_;
};

std::unique_ptr<Plugin> NewFgd(const YAML::Node& args, const std::string& path,
                               ConfigErrors& errors);

}  // namespace tidal
