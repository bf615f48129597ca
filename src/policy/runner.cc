#include "tidal/policy/runner.h"

#include <fmt/format.h>

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
  if (auto* f = dynamic_cast<const FilterPlugin*>(plugin.get())) filters_.push_back({name, f});
  if (auto* s = dynamic_cast<const ScorePlugin*>(plugin.get()); s && use_score) {
    scores_.push_back({name, s, weight});
    weight_sum_ += weight;
  }
  plugins_.push_back(std::move(plugin));
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
  using Steady = std::chrono::steady_clock;
  const std::size_t n = nodes.size();
  const std::size_t n_scores = scores_.size();
  out->best = -1;
  out->timings.clear();
  out->score_names.clear();
  for (const auto& s : scores_) out->score_names.push_back(s.name);
  // Reset in place, reusing the capacity of a previous call. Not assign(n, NodeResult{}):
  // that copies a Status per node; every path below writes r.status anyway.
  out->nodes.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    NodeResult& r = out->nodes[i];
    r.node = nodes[i];
    r.reasons.clear();
    r.gpus = GpuSet();
    r.placed = false;
    r.score = 0;
  }
  out->plugin_scores.assign(n * n_scores, 0.0);

  out->pod_status = BuildCycleState(config_, pod, &out->cycle, learned_);
  if (!out->pod_status.ok()) {
    for (auto& r : out->nodes) {
      r.status = out->pod_status;
      if (options.all_reasons) r.reasons.push_back(out->pod_status);
    }
    return;
  }

  // Plugin-major loops: one virtual call per plugin, not per node.
  Evaluation::Buffers& buf = out->buffers;
  buf.scratch.assign(n, NodeScratch{});
  buf.status.resize(n);
  for (auto& s : buf.status) s = Status();  // moved-from last call: reset the code too
  std::vector<NodeScratch>& scratch = buf.scratch;
  std::vector<Status>& status = buf.status;
  if (!options.all_reasons) buf.ok.assign(n, 1);
  for (const auto& [name, filter] : filters_) {
    const auto t0 = options.time_plugins ? Steady::now() : Steady::time_point{};
    if (options.all_reasons) {
      std::vector<Status>& one = buf.one;
      one.resize(n);
      for (auto& s : one) s = Status();
      filter->FilterBatch(out->cycle, nodes, scratch, one, true);
      for (std::size_t i = 0; i < n; ++i) {
        if (one[i].ok()) continue;
        one[i].Tag(name);
        if (status[i].ok()) status[i] = one[i];
        out->nodes[i].reasons.push_back(std::move(one[i]));
      }
    } else {
      filter->FilterBatch(out->cycle, nodes, scratch, status, false);
      // Tag the nodes this filter rejected. ok[] carries status[i].ok() from before
      // the filter, refreshed in the same pass (no snapshot pass per filter).
      for (std::size_t i = 0; i < n; ++i) {
        const bool now = status[i].ok();
        if (buf.ok[i] && !now) status[i].Tag(name);
        buf.ok[i] = now;
      }
    }
    if (options.time_plugins) out->timings.push_back({name, Steady::now() - t0, {}});
  }

  std::vector<double>& column = buf.column;
  column.resize(n);
  for (std::size_t p = 0; p < n_scores; ++p) {
    const auto t0 = options.time_plugins ? Steady::now() : Steady::time_point{};
    std::fill(column.begin(), column.end(), 0.0);
    scores_[p].plugin->ScoreBatch(out->cycle, nodes, scratch, status, column);
    for (std::size_t i = 0; i < n; ++i) {
      if (!status[i].ok()) continue;
      const double s = column[i];
      if (!(s >= 0 && s <= 100)) {
        // A plugin bug must not silently favour or bury a node.
        status[i] = Status::Error(fmt::format("score {} outside [0, 100]", s)).Tag(scores_[p].name);
        if (options.all_reasons) out->nodes[i].reasons.push_back(status[i]);
        continue;
      }
      out->plugin_scores[i * n_scores + p] = s;
    }
    if (options.time_plugins) {
      auto it = std::find_if(out->timings.begin(), out->timings.end(),
                             [&](const PluginTiming& t) { return t.plugin == scores_[p].name; });
      if (it == out->timings.end())
        it = out->timings.insert(out->timings.end(), {scores_[p].name, {}, {}});
      it->score = Steady::now() - t0;
    }
  }

  double best_score = -1;
  for (std::size_t i = 0; i < n; ++i) {
    NodeResult& r = out->nodes[i];
    r.status = std::move(status[i]);
    r.gpus = scratch[i].gpus;
    r.placed = scratch[i].placed;
    if (!r.status.ok()) continue;
    double total = 0;
    for (std::size_t p = 0; p < n_scores; ++p)
      total += scores_[p].weight * out->plugin_scores[i * n_scores + p];
    r.score = weight_sum_ > 0 ? total / weight_sum_ : 0;
    if (r.score > best_score) {
      best_score = r.score;
      out->best = static_cast<int>(i);
    }
  }
}

}  // namespace tidal
