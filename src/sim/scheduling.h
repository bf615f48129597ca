#pragma once
// kube-scheduler as the simulators emulate it: filter and score the nodes with
// the policy's Runner, pick the highest score (selectHost), and, for the trace
// experiments, reuse what a pod of the same shape last saw of an unchanged node.
// Shared by the seed simulator, the Philly replay and the FGD experiment.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/policy/config.h"
#include "tidal/policy/extender_score.h"
#include "tidal/policy/runner.h"
#include "tidal/sim/engine.h"

namespace tidal::sim {

// kube-scheduler's default profile scores with NodeResourcesFit (LeastAllocated,
// or MostAllocated for best-fit) and NodeResourcesBalancedAllocation, weight 1
// each. The in-tree Runner reports their weighted mean, so kube-scheduler's sum
// is that mean times the weights' sum.
struct InTreeScoreWeights {
  int resources_fit = 1;
  int balanced_allocation = 1;
  constexpr int Sum() const { return resources_fit + balanced_allocation; }
};
inline constexpr InTreeScoreWeights kDefaultProfileWeights;

// An extender's 0..kMaxExtenderPriority priority enters kube-scheduler's sum
// scaled to the node score range (MaxNodeScore 100), times its weight.
inline constexpr std::int64_t kMaxNodeScore = 100;
inline constexpr std::int64_t kExtenderPriorityScale = kMaxNodeScore / kMaxExtenderPriority;

// How selectHost breaks a tie between equal highest scores.
enum class TieBreak {
  kFirst,      // the first in visiting order (the FGD authors' scheduler: smallest name)
  kReservoir,  // uniformly, one draw per tie as it is found (kube-scheduler's selectHost)
  kOneDraw,    // uniformly, one draw among all ties (the seed simulator's; other draws)
};

// The indices 0 … n-1, in order, as an `order` for SelectHost. (std::views::iota
// would do, but clang 14 cannot compile libstdc++ 12's, and the fuzz build uses it.)
struct FirstIndices {
  struct Iterator {
    std::size_t i;
    std::size_t operator*() const { return i; }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i != other.i; }
  };
  std::size_t n;
  Iterator begin() const { return {0}; }
  Iterator end() const { return {n}; }
};

// The node, among those `ok`, with the highest score, visiting nodes in `order`
// (a range of indices into `ok` and `score`); -1 when none. NaN scores are never
// chosen.
template <class Order>
int SelectHost(const char* ok, const double* score, const Order& order, TieBreak ties,
               Random& rng) {
  int chosen = -1, count = 0;
  double best = -std::numeric_limits<double>::infinity();
  std::vector<int> tied;  // kOneDraw only
  for (const std::size_t n : order) {
    if (!ok[n]) continue;
    if (ties == TieBreak::kOneDraw) {
      if (score[n] > best) {
        best = score[n];
        tied.clear();
      }
      if (score[n] == best) tied.push_back(static_cast<int>(n));
      continue;
    }
    if (score[n] > best) {
      best = score[n];
      chosen = static_cast<int>(n);
      count = 1;
    } else if (score[n] == best && ties == TieBreak::kReservoir &&
               rng.Below(static_cast<std::uint64_t>(++count)) == 0) {
      chosen = static_cast<int>(n);
    }
  }
  if (ties == TieBreak::kOneDraw && !tied.empty()) chosen = tied[rng.Below(tied.size())];
  return chosen;
}

// What a pod of one shape last saw of each node. Pods of one shape score the same
// on an unchanged node (the plugins are pure functions of pod and node), so only
// nodes changed since need scoring again.
struct Verdicts {
  std::vector<std::uint32_t> version;  // node version scored at; 0: never
  std::vector<char> ok;
  std::vector<double> score;
  std::vector<GpuSet> gpus;

  // Nothing seen yet, of `nodes` nodes.
  void Reset(std::size_t nodes) {
    version.assign(nodes, 0);
    ok.assign(nodes, 0);
    score.assign(nodes, 0);
    gpus.assign(nodes, GpuSet());
  }
  // Calls stale(n) for each node whose version moved since it was scored.
  template <class Fn>
  void ForEachStale(std::span<const std::uint32_t> node_version, Fn&& stale) const {
    // Local copies: this runs over every node for every pod, and the compiler
    // cannot keep members in registers across the callback.
    const std::uint32_t* scored_at = version.data();
    const std::uint32_t* now = node_version.data();
    const std::size_t count = node_version.size();
    for (std::size_t n = 0; n < count; ++n)
      if (scored_at[n] != now[n]) stale(n);
  }
  void Store(std::size_t n, std::uint32_t at_version, const NodeResult& r) {
    version[n] = at_version;
    ok[n] = r.feasible() ? 1 : 0;
    score[n] = r.score;
    gpus[n] = r.gpus;
  }
};

// kube-scheduler with an extender, as the seed simulator runs it: the in-tree
// filter (resourcefit) and score (k8sdefault, or bestfit), then, for a policy
// with Tidal's extender, its filter on the survivors and its 0–10 priority times
// its weight added to the in-tree sum; the highest total wins.
class KubeScheduler {
 public:
  // `extender`: the extender's config, or null for kube-scheduler alone.
  KubeScheduler(const PolicyConfig& base, bool best_fit, const PolicyConfig* extender,
                int extender_weight);

  struct Choice {
    int node = -1;
    std::vector<int> named_gpus;  // what the extender wrote to tidal.io/gpus; empty: none
    // The extender's memory need per GPU for the pod, when it ran.
    std::optional<Bytes> memory_need_per_gpu;
  };
  // `next`: the pod after this one in the queue, for the extender's look-ahead
  // (its config's lookAhead; tidal serve's, tidal/policy/look_ahead.h).
  std::optional<Choice> Decide(const PodDemand& pod, const std::vector<NodeState>& views,
                               Random& tie_rng, const PodDemand* next = nullptr);

  // The extender's Runner (null without one), for its learned memory and the
  // rebalancer's targets.
  Runner* extender() { return extender_.get(); }

 private:
  void LookAhead(const PodDemand& pod, const PodDemand& next,
                 std::span<const NodeState* const> candidates, std::span<const double> scores,
                 std::span<const char> ok, std::span<std::int64_t> priorities);
  std::unique_ptr<Runner> intree_, extender_;
  int extender_weight_ = 0;
  Evaluation intree_eval_, ext_eval_;
  EvaluationScratch eval_scratch_;
};

}  // namespace tidal::sim
