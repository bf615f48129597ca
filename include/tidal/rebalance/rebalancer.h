#pragma once
// One round of `tidal rebalance`: the metrics history (instant queries at past
// times, one per step over the sustain window, cached between rounds), nodes,
// bound pods and disruption budgets from the API server, the plan, and, when
// executing, the evictions. Keeps the moves it made for the cooldown.
#include <map>
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/kube/client.h"
#include "tidal/metrics/snapshot.h"
#include "tidal/policy/runner.h"
#include "tidal/rebalance/evictor.h"
#include "tidal/rebalance/planner.h"

namespace tidal::rebalance {

struct RebalancerOptions {
  PlannerConfig planner;
  TimeMs history_step_ms = 60'000;  // one snapshot per step over the sustain window
  int page_size = 500;
};

struct Action {
  Move move;
  EvictionResult result;
};

struct Round {
  Status status;  // not ok: nothing was planned (API unreachable, ...)
  Plan plan;
  std::vector<Action> actions;  // executing only
};

class Rebalancer {
 public:
  // `evictor` null: dry run (nothing is sent to the API server but lists).
  Rebalancer(const Runner& policy, MetricsSource& metrics, kube::Transport& api, const Clock& clock,
             Evictor* evictor, RebalancerOptions options);
  Round RunOnce();

 private:
  Status LoadCluster(PlanInput* in);

  const Runner& policy_;
  MetricsSource& metrics_;
  kube::Transport& api_;
  const Clock& clock_;
  Evictor* evictor_;
  RebalancerOptions options_;
  std::map<TimeMs, MetricsSnapshot> history_;  // by query time
  std::map<std::string, TimeMs> moved_at_ms_;
};

std::string FormatRound(const Round& round, bool executing);

}  // namespace tidal::rebalance
