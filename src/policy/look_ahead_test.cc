#include "tidal/policy/look_ahead.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tidal {
namespace {

NextPodBest Over(const std::vector<double>& scores) {
  NextPodBest next;
  for (std::size_t n = 0; n < scores.size(); ++n) next.Offer(n, scores[n]);
  return next;
}

TEST(LookAhead, NextPodBestKeepsTheFirstOfEqualBests) {
  const NextPodBest next = Over({40, kNoAheadScore, 70, 70, 55});
  EXPECT_EQ(next.best, 70);
  EXPECT_EQ(next.best_at, 2u);
  EXPECT_EQ(next.second, 70);
  const NextPodBest none = Over({kNoAheadScore});
  EXPECT_EQ(none.best_at, NextPodBest::kNowhere);
  EXPECT_EQ(none.best, kNoAheadScore);
}

// Each case: the pod's candidates (node, score, the next pod's score there after
// the pod), the next pod's scores on every node before, and the node chosen.
TEST(LookAhead, ChoosesTheBestSumOfBothPods) {
  const double kNo = kNoAheadScore;
  struct Case {
    std::string name;
    std::vector<AheadCandidate> candidates;
    std::vector<double> next_before;
    std::size_t chosen;  // node
  };
  const Case cases[] = {
      // Node 0 is the only one where the next pod fits: the pod leaves it.
      {"leaves_the_next_pod_its_node", {{0, 50, kNo}, {1, 50, kNo}}, {50, kNo}, 1},
      // The pod's better score wins when the next pod does as well either way.
      {"better_score_when_the_next_is_indifferent", {{0, 60, 30}, {1, 50, 30}}, {30, 30}, 0},
      // Taking node 1 leaves the next pod a perfect fit there (90 after).
      {"leaves_a_perfect_fit", {{0, 60, 40}, {1, 55, 90}}, {40, 40}, 1},
      // The next pod's best is on node 0: after the pod there it falls to its
      // second best elsewhere (20); on node 1 it keeps 80.
      {"keeps_the_next_best_elsewhere", {{0, 70, kNo}, {1, 65, kNo}}, {80, 20}, 1},
      // Equal sums: the earlier candidate.
      {"equal_sums_to_the_earlier", {{3, 50, 50}, {2, 50, 50}}, {kNo, kNo, kNo, kNo}, 3},
      // No next pod anywhere: the pod's own best.
      {"no_next_pod", {{1, 40, kNo}, {0, 30, kNo}}, {kNo, kNo}, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::size_t k = ChooseLookingAhead(c.candidates, Over(c.next_before));
    ASSERT_LT(k, c.candidates.size());
    EXPECT_EQ(c.candidates[k].node, c.chosen);
  }
  EXPECT_EQ(ChooseLookingAhead({}, NextPodBest{}), 0u);  // none: the size
}

TEST(LookAhead, BestCandidatesAreTheFourBestInIndexOrderOfEqualScores) {
  const double kNo = kNoAheadScore;
  EXPECT_EQ(BestCandidates(std::vector<double>{10, 90, kNo, 90, 50, 70, 20}),
            (std::vector<std::size_t>{1, 3, 5, 4}));
  EXPECT_EQ(BestCandidates(std::vector<double>{kNo, 5}), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(BestCandidates(std::vector<double>{kNo}).empty());
}

}  // namespace
}  // namespace tidal
