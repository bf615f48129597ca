#include "tidal/policy/runner.h"

#include <fmt/format.h>

#include <algorithm>

#include "tidal/policy/cycle.h"
#include "tidal/policy/registry.h"

namespace tidal {

int Evaluation::FeasibleCount() const {
  int n = 0;
  for (const auto& r : nodes) n += r.feasible() ? 1 : 0;
  return n;
}

Runner::Runner(PolicyConfig config) : config_(std::move(config)) {
  ConfigErrors errors;
  for (const auto& pc : config_.plugins) {
    if (!pc.enabled) continue;
    const PluginEntry* entry = FindPlugin(pc.name);
    if (!entry) {
      errors.Add("plugins." + pc.name, "unknown plugin");
      continue;
    }
    auto plugin = entry->make(pc.ArgsNode(), "plugins." + pc.name + ".args", errors);
    if (plugin) Add(std::move(plugin), pc.weight);
  }
  if (!errors.empty()) throw InputError{errors.Joined()};
}

Runner::Runner(PolicyConfig config, std::vector<WeightedPlugin> plugins)
    : config_(std::move(config)) {
  for (auto& p : plugins) Add(std::move(p.plugin), p.weight, p.use_score);
}

void Runner::Add(std::unique_ptr<Plugin> plugin, double weight, bool use_score) {
  const std::string name(plugin->Name());
  per_node_ = per_node_ && plugin->PerNode();
  if (auto* f = dynamic_cast<const FilterPlugin*>(plugin.get())) filters_.push_back({name, f});
  if (auto* s = dynamic_cast<const ScorePlugin*>(plugin.get()); s && use_score) {
    scores_.push_back({name, s, weight});
    weights_.push_back(weight);
    weight_sum_ += weight;
  }
  plugins_.push_back(std::move(plugin));
  // Timings list the filters in order, then the score plugins; a plugin that
  // filters and scores has one row.
  timing_names_.clear();
  filter_timing_.clear();
  score_timing_.clear();
  for (const auto& f : filters_) {
    filter_timing_.push_back(timing_names_.size());
    timing_names_.push_back(f.first);
  }
  for (const auto& sc : scores_) {
    const auto it = std::find(timing_names_.begin(), timing_names_.end(), sc.name);
    score_timing_.push_back(static_cast<std::size_t>(it - timing_names_.begin()));
    if (it == timing_names_.end()) timing_names_.push_back(sc.name);
  }
}

Evaluation Runner::Evaluate(const PodDemand& pod, std::span<const NodeState> nodes,
                            const RunOptions& options) const {
  std::vector<const NodeState*> ptrs;
  ptrs.reserve(nodes.size());
  for (const auto& n : nodes) ptrs.push_back(&n);
  Evaluation out;
  Evaluate(pod, ptrs, options, &out);
  return out;
}

void Runner::Evaluate(const PodDemand& pod, std::span<const NodeState* const> nodes,
                      const RunOptions& options, Evaluation* out) const {
  EvaluationScratch scratch;
  Evaluate(pod, nodes, options, out, &scratch);
}

void Runner::Evaluate(const PodDemand& pod, std::span<const NodeState* const> nodes,
                      const RunOptions& options, Evaluation* out,
                      EvaluationScratch* scratch) const {
  const std::size_t n = nodes.size();
  const std::size_t n_scores = scores_.size();
  out->best = -1;
  out->timings.clear();
  out->score_names.resize(n_scores);
  for (std::size_t p = 0; p < n_scores; ++p) out->score_names[p] = scores_[p].name;
  out->nodes.resize(n);
  EvaluationScratch& buf = *scratch;
  if (out->reasons_used) {
    for (auto& r : out->reasons) r.clear();
    out->reasons_used = false;
  }
  // Sized only for a call that collects them, and kept (with their capacity) for
  // the next one: Reasons() reads past the end as none.
  if (options.all_reasons && out->reasons.size() < n) out->reasons.resize(n);

  out->pod_status = BuildCycleState(config_, pod, &out->cycle, learned_, workload_);
  if (!out->pod_status.ok()) {
    out->plugin_scores.assign(n * n_scores, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      NodeResult& r = out->nodes[i];
      r.node = nodes[i];
      r.status = out->pod_status;
      r.gpus = GpuSet();
      r.placed = false;
      r.score = 0;
      if (options.all_reasons) out->reasons[i].push_back(out->pod_status);
    }
    out->reasons_used = options.all_reasons;
    return;
  }

  if (options.time_plugins)
    for (const auto& name : timing_names_) out->timings.push_back({name, {}, {}});
  // Every entry is written below, block by block.
  out->plugin_scores.resize(n * n_scores);
  const std::size_t block = per_node_ ? kBlock : std::max<std::size_t>(n, 1);
  const std::size_t rows = std::min(block, n);
  buf.scratch.resize(rows);
  // Each block leaves the scratch it used reset (CollectScores); a call cut short
  // (an exception out of a plugin) may not have.
  if (buf.dirty) std::fill(buf.scratch.begin(), buf.scratch.end(), NodeScratch{});
  buf.dirty = true;
  buf.ok.resize(rows);
  buf.column.resize(rows * n_scores);
  if (options.all_reasons) {
    buf.one.resize(rows);
    out->reasons_used = true;
  }
  PodWeights(out->cycle, &buf);
  double best_score = -1;
  for (std::size_t begin = 0; begin < n; begin += block)
    EvaluateBlock(nodes.subspan(begin, std::min(block, n - begin)), begin, options, out, &buf,
                  &best_score);
  buf.dirty = false;
}

void Runner::PodWeights(const CycleState& cycle, EvaluationScratch* buf) const {
  buf->weights.assign(weights_.begin(), weights_.end());
  buf->weight_sum = weight_sum_;
  bool skipped = false;
  for (std::size_t p = 0; p < scores_.size(); ++p)
    if (scores_[p].plugin->SkipsScore(cycle)) {
      buf->weights[p] = 0;
      skipped = true;
    }
  if (!skipped) return;
  // Summed again in order (not subtracted): the same sum as a runner configured
  // without the skipping plugins.
  buf->weight_sum = 0;
  for (double w : buf->weights) buf->weight_sum += w;
}

void Runner::EvaluateBlock(std::span<const NodeState* const> nodes, std::size_t begin,
                           const RunOptions& options, Evaluation* out, EvaluationScratch* scratch,
                           double* best_score) const {
  using Steady = std::chrono::steady_clock;
  const std::size_t n = nodes.size();
  const std::size_t n_scores = scores_.size();
  // Plugin-major loops over the block: one virtual call per plugin, not per node.
  EvaluationScratch& buf = *scratch;
  NodeResult* const results = out->nodes.data() + begin;
  const std::span<NodeScratch> node_scratch(buf.scratch.data(), n);
  // node_scratch is all NodeScratch{} here: CollectScores resets each entry once read.
  // The filters write each node's verdict in its result, in place.
  for (std::size_t i = 0; i < n; ++i) results[i].status.Reset();
  const StatusColumn status(&results[0].status, n, sizeof(NodeResult));
  // One clock read per plugin, each closing the previous one's time: a read costs
  // about as much as evaluating a node.
  auto last = options.time_plugins ? Steady::now() : Steady::time_point{};
  const auto lap = [&last]() {
    const auto now = Steady::now();
    const auto took = now - last;
    last = now;
    return took;
  };
  for (std::size_t f = 0; f < filters_.size(); ++f) {
    const auto& [name, filter] = filters_[f];
    if (options.all_reasons) {
      const std::span<Status> one(buf.one.data(), n);
      for (auto& s : one) s = Status();
      filter->FilterBatch(out->cycle, nodes, node_scratch, one, true);
      const bool tagged = filter->TagsRejections();
      for (std::size_t i = 0; i < n; ++i) {
        if (one[i].ok()) continue;
        if (!tagged) one[i].Tag(name);
        if (status[i].ok()) status[i] = one[i];
        out->reasons[begin + i].push_back(std::move(one[i]));
      }
    } else if (filter->TagsRejections()) {
      filter->FilterBatch(out->cycle, nodes, node_scratch, status, false);
    } else {
      // Tag the nodes this filter rejected: those ok before it and not after.
      for (std::size_t i = 0; i < n; ++i) buf.ok[i] = status[i].ok();
      filter->FilterBatch(out->cycle, nodes, node_scratch, status, false);
      for (std::size_t i = 0; i < n; ++i)
        if (buf.ok[i] && !status[i].ok()) status[i].Tag(name);
    }
    if (options.time_plugins) out->timings[filter_timing_[f]].filter += lap();
  }

  // Each score plugin fills its column for the block; one pass then checks the
  // ranges, keeps the per-plugin scores and sums them.
  double* const columns = buf.column.data();  // [plugin][node of the block]
  for (std::size_t p = 0; p < n_scores; ++p) {
    scores_[p].plugin->ScoreBatch(out->cycle, nodes, node_scratch, status,
                                  std::span<double>(columns + p * n, n));
    if (options.time_plugins) out->timings[score_timing_[p]].score += lap();
  }

  double* const plugin_scores = out->plugin_scores.data() + begin * n_scores;
  // The usual policies have a few score plugins: with their number known to the
  // compiler the per-node loop over them unrolls.
  switch (n_scores) {
    case 1:
      CollectScores<1>(nodes, begin, columns, plugin_scores, options, out, buf, best_score);
      break;
    case 2:
      CollectScores<2>(nodes, begin, columns, plugin_scores, options, out, buf, best_score);
      break;
    case 3:
      CollectScores<3>(nodes, begin, columns, plugin_scores, options, out, buf, best_score);
      break;
    case 4:
      CollectScores<4>(nodes, begin, columns, plugin_scores, options, out, buf, best_score);
      break;
    default:
      CollectScores<0>(nodes, begin, columns, plugin_scores, options, out, buf, best_score);
  }
}

template <std::size_t kScores>
void Runner::CollectScores(std::span<const NodeState* const> nodes, std::size_t begin,
                           const double* columns, double* plugin_scores, const RunOptions& options,
                           Evaluation* out, EvaluationScratch& buf, double* best_score) const {
  const std::size_t n = nodes.size();
  const std::size_t n_scores = kScores > 0 ? kScores : scores_.size();
  const double* const weights = buf.weights.data();
  const double weight_sum = buf.weight_sum;
  NodeScratch* const scratch = buf.scratch.data();
  NodeResult* const results = out->nodes.data() + begin;
  for (std::size_t i = 0; i < n; ++i) {
    NodeResult& r = results[i];
    r.node = nodes[i];
    r.gpus = scratch[i].gpus;
    r.placed = scratch[i].placed;
    r.score = 0;
    scratch[i] = NodeScratch{};  // ready for the next block
    double* const cells = plugin_scores + i * n_scores;
    if (!r.status.ok()) {
#pragma GCC unroll 4
      for (std::size_t p = 0; p < n_scores; ++p) cells[p] = 0;
      continue;
    }
    double total = 0;
    bool in_range = true;
#pragma GCC unroll 4
    for (std::size_t p = 0; p < n_scores; ++p) {
      const double sc = columns[p * n + i];
      in_range &= (sc >= 0) & (sc <= 100);
      cells[p] = sc;
      total += weights[p] * sc;
    }
    if (!in_range) {
      RejectOutOfRange(cells, options, begin + i, out);
      continue;
    }
    r.score = weight_sum > 0 ? total / weight_sum : 0;
    if (r.score > *best_score) {
      *best_score = r.score;
      out->best = static_cast<int>(begin + i);
    }
  }
}

void Runner::RejectOutOfRange(double* cells, const RunOptions& options, std::size_t index,
                              Evaluation* out) const {
  NodeResult* const r = &out->nodes[index];
  // A plugin bug must not silently favour or bury a node: the first score out of
  // range makes the node an error, and it and the scores after it read 0.
  for (std::size_t p = 0; p < scores_.size(); ++p) {
    const double sc = cells[p];
    if (sc >= 0 && sc <= 100) continue;
    r->status = Status::Error(fmt::format("score {} outside [0, 100]", sc)).Tag(scores_[p].name);
    if (options.all_reasons) out->reasons[index].push_back(r->status);
    std::fill(cells + p, cells + scores_.size(), 0.0);
    return;
  }
}

}  // namespace tidal
