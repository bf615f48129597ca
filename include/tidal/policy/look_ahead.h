#pragma once
// The look-ahead: a pod placed with the next pod in the queue in view. Among the
// pod's best kLookAheadCandidates nodes (best first, equal scores in tie order),
// the one where the pod's score plus the best score the next pod can still get
// (on that node after the pod, or on any other node) is highest; equal values go
// to the earlier candidate. It stops a pod from taking the node the next one
// needs, or makes it take the one that leaves the next a perfect fit. The
// simulator's placement loop and tidal serve's filter both choose by it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "tidal/core/types.h"

namespace tidal {

// Measured on the four openb lists: 2, 3, 4, 8 and 16 candidates; 4 was best.
inline constexpr std::size_t kLookAheadCandidates = 4;
inline constexpr double kNoAheadScore = -std::numeric_limits<double>::infinity();

// The next pod's best score over every node, the runner-up and where the best is.
struct NextPodBest {
  static constexpr std::size_t kNowhere = static_cast<std::size_t>(-1);
  double best = kNoAheadScore, second = kNoAheadScore;
  std::size_t best_at = kNowhere;
  // Nodes offered in tie order: of equal bests the first is kept.
  void Offer(std::size_t node, double score);
};

struct AheadCandidate {
  std::size_t node = 0;
  double score = 0;                   // the pod's
  double next_after = kNoAheadScore;  // the next pod's on this node after the pod
};

// The index in `candidates` of the node chosen; candidates.size() when empty.
std::size_t ChooseLookingAhead(std::span<const AheadCandidate> candidates, const NextPodBest& next);

// The pod's best kLookAheadCandidates of `scores` (kNoAheadScore: not feasible),
// best first, equal scores in index order.
std::vector<std::size_t> BestCandidates(std::span<const double> scores);

class Runner;

// One request's look-ahead, as tidal serve's filter and the simulator's
// kube-scheduler run it: the pod's `scores` on `nodes` (kNoAheadScore where it
// does not fit), the next pod evaluated by `runner` over the same nodes and,
// for each of the pod's best candidates, on `after_placing(i)` (node i with the
// pod placed). The node to raise above the pod's best, or nullopt when its best
// stays (or fewer than two nodes fit).
std::optional<std::size_t> LookAheadPick(
    const Runner& runner, const PodDemand& next, std::span<const NodeState* const> nodes,
    std::span<const double> scores, const std::function<NodeState(std::size_t)>& after_placing);

// Extender priorities (0..kMaxExtenderPriority) with `chosen` alone on top: one
// above the best of the other feasible nodes, or, at the top already, the others
// kept below it.
void RaiseAlone(std::size_t chosen, std::span<const char> feasible,
                std::span<std::int64_t> priorities);

}  // namespace tidal
