#pragma once
// The rebalancing planner (docs/rebalance.md): from metrics snapshots over time,
// the bound pods and the disruption budgets, which pods to move and why. Pure
// and deterministic: the time is an input, nothing is read or sent here.
//
// A move happens only when (1) a node has stayed above a reject threshold, or
// the cluster's LSCS above its limit, for the whole sustain window with fresh
// samples (one noisy sample, a gap or a stale reading moves nothing); (2) the pod
// is marked movable, has a controller to recreate it, was not moved or started
// within the cooldown and no disruption budget forbids it; (3) the same policy
// the extender runs finds a target with fresh metrics; and (4) the expected gain
// beats the restart's cost. The gain is what the pod itself gains: how much
// slower than there it runs here (the contention the metrics show), over the
// time it is expected to keep running; on a node above the GPU-memory reject
// threshold, the risk of an OOM kill instead. An imbalance alone gains nothing.
#include <map>
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/types.h"
#include "tidal/kubetypes/node.h"
#include "tidal/metrics/snapshot.h"
#include "tidal/policy/runner.h"
#include "tidal/rebalance/pods.h"

namespace tidal::rebalance {

struct PlannerConfig {
  TimeMs sustain_ms = 600'000;         // a trigger must hold this long
  TimeMs max_sample_age_ms = 120'000;  // a node's sample older than this at a snapshot: stale
  TimeMs max_gap_ms = 180'000;         // a hole this long in the history breaks "stayed above"
  double lscs_limit = 0.15;            // docs/design.md#golden-metrics
  int max_moves = 2;                   // per plan (the eviction rate limit)
  TimeMs cooldown_ms = 1'800'000;  // a pod (or its controller) moved or started this recently stays
  TimeMs gain_horizon_ms = 1'800'000;  // a move's relief is counted for at most this long
  double min_gain_over_cost = 1.0;     // move only when gain ≥ this × cost
  TimeMs default_startup_ms = 60'000;  // without tidal.io/startup-seconds
};

// Validates; every problem, with its flag or field name.
std::vector<std::string> Validate(const PlannerConfig& config);

struct PlanInput {
  TimeMs now_ms = 0;
  std::vector<MetricsSnapshot> snapshots;  // any order; only those within the sustain window count
  std::vector<KubeNode> nodes;             // empty: the nodes of the newest snapshot
  std::vector<PodInfo> pods;
  std::vector<DisruptionBudget> budgets;
  // Moves made earlier (by pod key and by controller "ns/Kind/name"), for the cooldown.
  std::map<std::string, TimeMs> moved_at_ms;
};

// Storage await above which IO-bound work slows (docs/design.md#storage:
// L_io = min(1, await / 30 ms)).
inline constexpr double kAwaitSlowdownMs = 30;

// How much slower than alone a pod runs on a node, from what the node's metrics
// show (each factor ≥ 1: wall time per unit of work):
// - storage: the share `io_share` of its time spent waiting on storage stretches
//   by await / 30 ms once await passes 30 ms: 1 − b + b · max(1, await / 30);
// - NVLink, for a pod that uses it on `nvlink_gpus` GPUs (0: does not): the
//   node's competition index c (NVLink pods per link slot) times its GPUs
//   estimates how many pods share each of its GPUs' slots, if the node's NVLink
//   pods are spread like this one; above one it runs that much slower:
//   max(1, c · k).
// Compute time-slicing is not in it: the snapshot has no per-GPU compute use.
struct Slowdown {
  double io = 1, nvlink = 1;
  double total() const { return io * nvlink; }
};
Slowdown EstimateSlowdown(const NodeState& node, double io_share, int nvlink_gpus);

struct Move {
  std::string pod;        // ns/name
  std::string owner_key;  // ns/Kind/name, or the pod key
  std::string from, to;
  std::string trigger;  // why its node was a source
  double gain_gpu_s = 0;
  double cost_gpu_s = 0;
  double target_score = 0;
  double slowdown_from = 1, slowdown_to = 1;  // Slowdown::total() here and at the target
  TimeMs remaining_ms = 0;                    // the run time the gain counts (capped)
  std::string reason;                         // one line for people
};

struct Skip {
  std::string subject;  // "node a10-3" or "pod ml/train-1"
  std::string reason;
};

struct Plan {
  TimeMs at_ms = 0;
  bool metrics_ok = false;            // false: no move at all (the reason is in skipped)
  double lscs = -1;                   // newest snapshot's, -1: unknown (a node stale)
  std::vector<std::string> triggers;  // "node X: GPU memory 91% > 82% for 10m", "cluster: LSCS ..."
  std::vector<Move> moves;
  std::vector<Skip> skipped;
};

Plan MakePlan(const Runner& policy, const PlannerConfig& config, const PlanInput& input);

// Human text: triggers, moves with gain and cost, skips.
std::string FormatPlan(const Plan& plan);

}  // namespace tidal::rebalance
