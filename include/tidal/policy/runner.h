#pragma once
// The runner: PreFilter, filter plugins, weighted score plugins. It times each
// plugin, checks scores are in [0, 100], tags failures with the plugin's name and
// returns per node the verdict, reasons, per-plugin scores, final score and GPUs.
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tidal/policy/config.h"
#include "tidal/policy/fragmentation.h"
#include "tidal/policy/memory_learner.h"
#include "tidal/policy/plugin.h"

namespace tidal {

// One line of cache per node that fits: the runner writes every field below but
// the status's numbers (only a rejection has them) on each call.
struct alignas(64) NodeResult {
  const NodeState* node = nullptr;
  GpuSet gpus;       // chosen by the placer, when one ran
  double score = 0;  // final, 0..100, for feasible nodes
  bool placed = false;
  Status status;  // the first failure, or fits (every failure: Evaluation::Reasons)
  bool feasible() const { return status.ok(); }
};

struct PluginTiming {
  std::string plugin;
  std::chrono::nanoseconds filter{0};
  std::chrono::nanoseconds score{0};
};

struct Evaluation {
  Status pod_status;  // unresolvable everywhere (e.g. a malformed annotation)
  CycleState cycle;
  std::vector<NodeResult> nodes;         // in input order
  std::vector<std::string> score_names;  // score plugins, in order
  std::vector<double> plugin_scores;     // [node][score plugin], row-major
  std::vector<PluginTiming> timings;
  // Every failure of each node, in filter order: only with RunOptions::all_reasons
  // (empty otherwise), so that the hot path carries none of it.
  std::vector<std::vector<Status>> reasons;
  int best = -1;  // index into nodes of the highest final score; ties: first
  // Some entry of `reasons` may be non-empty: cleared on the next call that reuses it.
  bool reasons_used = false;

  // Every failure of node `node` (all_reasons), or none.
  std::span<const Status> Reasons(std::size_t node) const {
    return node < reasons.size() ? std::span<const Status>(reasons[node])
                                 : std::span<const Status>();
  }
  double PluginScore(std::size_t node, std::size_t plugin) const {
    return plugin_scores[node * score_names.size() + plugin];
  }
  int FeasibleCount() const;
};

// Runner::Evaluate's working storage, apart from its result: a caller that
// evaluates again and again (the extender's request parts, the simulators)
// keeps one, so that nothing is allocated once warm. One per thread. The
// buffers hold one block of nodes (Runner::kBlock).
struct EvaluationScratch {
  std::vector<NodeScratch> scratch;
  std::vector<Status> one;      // one filter's verdicts (all_reasons)
  std::vector<char> ok;         // status ok before the current filter (untagging filters)
  std::vector<double> column;   // the score plugins' scores, [plugin][node]
  std::vector<double> weights;  // this pod's: 0 for a plugin that skips it (SkipsScore)
  double weight_sum = 0;
  bool dirty = false;  // scratch may hold something other than NodeScratch{}
};

struct RunOptions {
  bool all_reasons =
      false;  // run every filter on every node (explain), not just until the first failure
  bool time_plugins = true;
};

class Runner {
 public:
  // Builds the enabled plugins of `config`; throws InputError on bad plugin args.
  explicit Runner(PolicyConfig config);
  // With plugins built by the caller (tests, custom simulator policies), in order.
  struct WeightedPlugin {
    std::unique_ptr<Plugin> plugin;
    double weight = 1;
    bool use_score = true;  // false: only its filter runs
  };
  Runner(PolicyConfig config, std::vector<WeightedPlugin> plugins);

  void Evaluate(const PodDemand& pod, std::span<const NodeState* const> nodes,
                const RunOptions& options, Evaluation* out, EvaluationScratch* scratch) const;
  // The same with working storage of its own, allocated for the call.
  void Evaluate(const PodDemand& pod, std::span<const NodeState* const> nodes,
                const RunOptions& options, Evaluation* out) const;
  Evaluation Evaluate(const PodDemand& pod, std::span<const NodeState> nodes,
                      const RunOptions& options = {}) const;

  const PolicyConfig& config() const { return config_; }
  // Nodes evaluated together when every plugin is PerNode: each plugin runs over a
  // block while its nodes and working storage are still in cache.
  static constexpr std::size_t kBlock = 128;
  // Learned memory estimates for undeclared pods (memoryLearning); the learner
  // outlives the runner. Null: the static rule alone (docs/design.md#memory-estimate).
  void SetLearnedMemory(const MemoryLearner* learned) { learned_ = learned; }
  // The GPU workload learned from the pods seen (fgd's `tasks: learned`); the
  // learner outlives the runner. Null: fgd uses its configured tasks.
  void SetLearnedWorkload(const WorkloadLearner* workload) { workload_ = workload; }
  // Whether score plugin `score` (an index into Evaluation::score_names) was left
  // out of the weighted mean for the cycle's pod (Plugin::SkipsScore).
  bool SkipsScore(std::size_t score, const CycleState& cycle) const {
    return scores_[score].plugin->SkipsScore(cycle);
  }

 private:
  struct Score {
    std::string name;
    const ScorePlugin* plugin;
    double weight;
  };
  void Add(std::unique_ptr<Plugin> plugin, double weight, bool use_score = true);
  // Filters then scores nodes [begin, begin + block.size()) into out.
  void EvaluateBlock(std::span<const NodeState* const> block, std::size_t begin,
                     const RunOptions& options, Evaluation* out, EvaluationScratch* buf,
                     double* best_score) const;
  // The results of a block once scored: kScores score plugins (0: any number).
  template <std::size_t kScores>
  void CollectScores(std::span<const NodeState* const> nodes, std::size_t begin,
                     const double* columns, double* plugin_scores, const RunOptions& options,
                     Evaluation* out, EvaluationScratch& buf, double* best_score) const;
  // The pod's weights into buf: the configured ones, 0 for plugins that skip it.
  void PodWeights(const CycleState& cycle, EvaluationScratch* buf) const;
  [[gnu::cold]] void RejectOutOfRange(double* cells, const RunOptions& options, std::size_t index,
                                      Evaluation* out) const;

  PolicyConfig config_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<std::pair<std::string, const FilterPlugin*>> filters_;
  std::vector<Score> scores_;
  std::vector<double> weights_;  // of scores_, in order, for the hot loop
  double weight_sum_ = 0;
  bool per_node_ = true;  // every plugin is PerNode
  // Evaluation::timings as filled when plugins are timed: the filters, then the
  // score plugins that are not also filters; each plugin's row.
  std::vector<std::string> timing_names_;
  std::vector<std::size_t> filter_timing_, score_timing_;
  const MemoryLearner* learned_ = nullptr;
  const WorkloadLearner* workload_ = nullptr;
};

}  // namespace tidal
