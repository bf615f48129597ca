#include "tidal/policy/look_ahead.h"

#include <algorithm>
#include <numeric>

#include "tidal/policy/extender_score.h"
#include "tidal/policy/runner.h"

namespace tidal {

void NextPodBest::Offer(std::size_t node, double score) {
  if (!(score > kNoAheadScore)) return;
  if (score > best) {
    second = best;
    best = score;
    best_at = node;
  } else if (score > second) {
    second = score;
  }
}

std::size_t ChooseLookingAhead(std::span<const AheadCandidate> candidates,
                               const NextPodBest& next) {
  std::size_t chosen = candidates.size();
  double chosen_value = kNoAheadScore;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const AheadCandidate& c = candidates[k];
    double next_best = c.node == next.best_at ? next.second : next.best;
    next_best = std::max(next_best, c.next_after);
    const double value = c.score + (next_best > kNoAheadScore ? next_best : 0);
    if (value > chosen_value) {
      chosen_value = value;
      chosen = k;
    }
  }
  return chosen;
}

std::vector<std::size_t> BestCandidates(std::span<const double> scores) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (scores[i] > kNoAheadScore) order.push_back(i);
  const std::size_t m = std::min(kLookAheadCandidates, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
                    });
  order.resize(m);
  return order;
}

std::optional<std::size_t> LookAheadPick(
    const Runner& runner, const PodDemand& next, std::span<const NodeState* const> nodes,
    std::span<const double> scores, const std::function<NodeState(std::size_t)>& after_placing) {
  const std::vector<std::size_t> best = BestCandidates(scores);
  if (best.size() < 2) return std::nullopt;
  Evaluation eval;
  runner.Evaluate(next, nodes, RunOptions{false, false}, &eval);
  NextPodBest next_best;
  if (eval.pod_status.ok())
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (eval.nodes[i].feasible()) next_best.Offer(i, eval.nodes[i].score);
  std::vector<AheadCandidate> options;
  for (std::size_t i : best) {
    const NodeState after = after_placing(i);
    const NodeState* one[] = {&after};
    runner.Evaluate(next, one, RunOptions{false, false}, &eval);
    const bool fits = eval.pod_status.ok() && eval.nodes[0].feasible();
    options.push_back({i, scores[i], fits ? eval.nodes[0].score : kNoAheadScore});
  }
  const std::size_t k = ChooseLookingAhead(options, next_best);
  if (k == 0 || k == options.size()) return std::nullopt;
  return options[k].node;
}

void RaiseAlone(std::size_t chosen, std::span<const char> feasible,
                std::span<std::int64_t> priorities) {
  std::int64_t top = 0;
  for (std::size_t i = 0; i < priorities.size(); ++i)
    if (i != chosen && feasible[i]) top = std::max(top, priorities[i]);
  priorities[chosen] = std::min<std::int64_t>(kMaxExtenderPriority, top + 1);
  for (std::size_t i = 0; i < priorities.size(); ++i)
    if (i != chosen) priorities[i] = std::min(priorities[i], priorities[chosen] - 1);
}

}  // namespace tidal
