#include "sim/scheduling.h"

#include "tidal/metrics/reservations.h"
#include "tidal/policy/look_ahead.h"

namespace tidal::sim {

KubeScheduler::KubeScheduler(const PolicyConfig& base, bool best_fit, const PolicyConfig* extender,
                             int extender_weight)
    : extender_weight_(extender_weight) {
  PolicyConfig intree = base;
  intree.plugins = {{"resourcefit", true, 1, ""},
                    {best_fit ? "bestfit" : "k8sdefault", true, 1, ""}};
  intree_ = std::make_unique<Runner>(intree);
  if (extender) extender_ = std::make_unique<Runner>(*extender);
}

std::optional<KubeScheduler::Choice> KubeScheduler::Decide(const PodDemand& pod,
                                                           const std::vector<NodeState>& views,
                                                           Random& tie_rng, const PodDemand* next) {
  std::vector<const NodeState*> all;
  for (const auto& v : views) all.push_back(&v);
  intree_->Evaluate(pod, all, RunOptions{false, false}, &intree_eval_, &eval_scratch_);
  std::vector<const NodeState*> feasible;
  std::vector<int> index;
  for (std::size_t i = 0; i < views.size(); ++i)
    if (intree_eval_.nodes[i].feasible()) {
      feasible.push_back(&views[i]);
      index.push_back(static_cast<int>(i));
    }
  if (feasible.empty()) return std::nullopt;
  std::vector<double> total(feasible.size());
  std::vector<char> ok(feasible.size(), 1);
  for (std::size_t k = 0; k < feasible.size(); ++k)
    total[k] = kDefaultProfileWeights.Sum() * intree_eval_.nodes[index[k]].score;
  Choice choice;
  if (extender_) {
    extender_->Evaluate(pod, feasible, RunOptions{false, false}, &ext_eval_, &eval_scratch_);
    if (!ext_eval_.pod_status.ok()) return std::nullopt;
    choice.memory_need_per_gpu = ext_eval_.cycle.memory_need_per_gpu;
    std::vector<std::int64_t> priorities(feasible.size(), 0);
    std::vector<double> scores(feasible.size(), kNoAheadScore);
    for (std::size_t k = 0; k < feasible.size(); ++k) {
      ok[k] = ext_eval_.nodes[k].feasible();
      if (!ok[k]) continue;
      priorities[k] = ToExtenderPriority(ext_eval_.nodes[k].score);
      scores[k] = ext_eval_.nodes[k].score;
    }
    if (next && extender_->config().look_ahead)
      LookAhead(pod, *next, feasible, scores, ok, priorities);
    for (std::size_t k = 0; k < feasible.size(); ++k)
      if (ok[k])
        total[k] += static_cast<double>(priorities[k] * extender_weight_ * kExtenderPriorityScale);
  }
  const int pick =
      SelectHost(ok.data(), total.data(), FirstIndices{ok.size()}, TieBreak::kOneDraw, tie_rng);
  if (pick < 0) return std::nullopt;
  choice.node = index[pick];
  if (extender_ && ext_eval_.nodes[pick].placed)
    choice.named_gpus = ext_eval_.nodes[pick].gpus.Indices();
  return choice;
}

// As tidal serve's filter (Extender::LookAhead): the extender's candidates are the
// nodes kube-scheduler's own filters passed.
void KubeScheduler::LookAhead(const PodDemand& pod, const PodDemand& next,
                              std::span<const NodeState* const> candidates,
                              std::span<const double> scores, std::span<const char> ok,
                              std::span<std::int64_t> priorities) {
  const CycleState& cycle = ext_eval_.cycle;
  const int slots = extender_->config().nvlink.slots_per_gpu;
  const std::optional<std::size_t> pick =
      LookAheadPick(*extender_, next, candidates, scores, [&](std::size_t k) {
        return AfterPlacing(*candidates[k], pod, ext_eval_.nodes[k].gpus, cycle.memory_need_per_gpu,
                            cycle.uses_nvlink, slots);
      });
  if (pick) RaiseAlone(*pick, ok, priorities);
}

}  // namespace tidal::sim
