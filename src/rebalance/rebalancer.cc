#include "tidal/rebalance/rebalancer.h"

#include <fmt/format.h>

#include "tidal/kube/objects.h"

namespace tidal::rebalance {

Rebalancer::Rebalancer(const Runner& policy, MetricsSource& metrics, kube::Transport& api,
                       const Clock& clock, Evictor* evictor, RebalancerOptions options)
    : policy_(policy),
      metrics_(metrics),
      api_(api),
      clock_(clock),
      evictor_(evictor),
      options_(std::move(options)) {}

Status Rebalancer::LoadCluster(PlanInput* in) {
  std::vector<std::string> items;
  if (Status s = ListAll(api_, "/api/v1/nodes", options_.page_size, &items); !s.ok()) return s;
  for (const auto& item : items) {
    KubeNode n;
    if (Status s = kube::DecodeNode(item, &n); !s.ok()) return s;
    // Nodes without GPUs run no agent: counted, they would read as stale forever
    // and keep LSCS unknown.
    if (n.allocatable_gpus <= 0) continue;
    in->nodes.push_back(std::move(n));
  }
  if (Status s = ListAll(api_, "/api/v1/pods?fieldSelector=" + kube::UrlEncode("spec.nodeName!="),
                         options_.page_size, &items);
      !s.ok())
    return s;
  for (const auto& item : items) {
    PodInfo p;
    // One malformed pod is not moved; it does not stop the others.
    if (DecodePodInfo(item, &p).ok()) in->pods.push_back(std::move(p));
  }
  // Without the budgets nothing is planned: a move must never ignore one.
  if (Status s = ListAll(api_, "/apis/policy/v1/poddisruptionbudgets", options_.page_size, &items);
      !s.ok())
    return s;
  for (const auto& item : items) {
    DisruptionBudget b;
    if (Status s = DecodeDisruptionBudget(item, &b); !s.ok()) return s;
    in->budgets.push_back(std::move(b));
  }
  return Status::Ok();
}

Round Rebalancer::RunOnce() {
  Round round;
  const TimeMs now = clock_.NowMs();
  const TimeMs step = options_.history_step_ms;
  const TimeMs window = options_.planner.sustain_ms;
  // Query times on a grid, so later rounds reuse what earlier ones fetched.
  const TimeMs newest = now - now % step;
  for (auto it = history_.begin(); it != history_.end();)
    it = it->first < newest - window ? history_.erase(it) : std::next(it);
  for (TimeMs t = newest - window / step * step; t <= newest; t += step) {
    if (history_.count(t) && t != newest) continue;
    MetricsSnapshot snap;
    // A failed query leaves a hole: the planner's coverage check then holds off.
    if (metrics_.Fetch(t, &snap).ok()) history_[t] = std::move(snap);
  }
  PlanInput in;
  in.now_ms = now;
  for (const auto& [t, snap] : history_) in.snapshots.push_back(snap);
  // The newest reading is taken now, not at the last grid point (up to a step old).
  MetricsSnapshot latest;
  if (now != newest && metrics_.Fetch(now, &latest).ok()) in.snapshots.push_back(std::move(latest));
  if (Status s = LoadCluster(&in); !s.ok()) {
    round.status = Status::Error("Kubernetes API " + api_.Describe() + ": " + s.reason());
    return round;
  }
  // The competition index from the pods listed now, on the nodes whose agent
  // does not give it, as the extender does from its pod watch.
  const MetricsSourceConfig& sources = policy_.config().metrics_source;
  const NvlinkPodCounts nvlink_pods = CountNvlinkPods(in.pods, policy_.config().nvlink);
  for (MetricsSnapshot& snap : in.snapshots)
    ApplyPodCompetition(nvlink_pods, policy_.config().nvlink.slots_per_gpu,
                        sources.nvlink == MetricsSourceKind::kDcgmExporter, &snap);
  in.moved_at_ms = moved_at_ms_;
  round.plan = MakePlan(policy_, options_.planner, in);
  if (!evictor_) return round;
  for (const Move& m : round.plan.moves) {
    const std::size_t slash = m.pod.find('/');
    Action a{m, evictor_->Evict(m.pod.substr(0, slash), m.pod.substr(slash + 1))};
    if (a.result.outcome == EvictionResult::Outcome::kEvicted) {
      moved_at_ms_[m.pod] = now;
      moved_at_ms_[m.owner_key] = now;
    }
    round.actions.push_back(std::move(a));
  }
  return round;
}

std::string FormatRound(const Round& round, bool executing) {
  if (!round.status.ok()) return "rebalance: nothing planned: " + round.status.reason() + "\n";
  std::string out = FormatPlan(round.plan);
  if (!executing) {
    if (!round.plan.moves.empty()) out += "  (dry run: nothing evicted; --execute to act)\n";
    return out;
  }
  for (const auto& a : round.actions)
    out += fmt::format("  evict    {}: {} ({})\n", a.move.pod, OutcomeName(a.result.outcome),
                       a.result.detail);
  return out;
}

}  // namespace tidal::rebalance
