#include "tidal/sim/replay.h"

#include <gtest/gtest.h>

#include "tidal/core/status.h"

namespace tidal::sim {
namespace {

struct Case {
  const char* name;
  std::vector<ReplayVc> vcs;
  int gpus_per_node;
  std::vector<ReplayJob> jobs;
  // Per completed job, in trace order.
  std::vector<double> queue_s, jct_s;
  int skipped_no_vc, skipped_too_big, multi_node;
  double util_mean;
};

// Hand-computed; every policy must give the same times (one node, or nodes
// that are interchangeable for the jobs).
std::vector<Case> Cases() {
  return {
      {"fifo-on-one-node",
       {{"a", 1}},
       2,
       {{"j1", 0, 100, 2, "a"},  // 0 → 100
        {"j2", 10, 50, 1, "a"},  // waits for j1: 100 → 150
        {"j3", 20, 30, 1, "a"},  // the other GPU: 100 → 130
        {"j4", 0, 10, 1, "nowhere"},
        {"j5", 0, 10, 3, "a"}},
       {0, 90, 80},
       {100, 140, 110},
       1,
       1,
       0,
       // 2 GPUs for 130 s, then 1 for 20 s, over 150 s × 2 GPUs.
       (2 * 130.0 + 20.0) / (150 * 2)},
      {"a-small-job-passes-a-waiting-larger-one",
       {{"a", 1}},
       4,
       {{"j1", 0, 100, 3, "a"},  // 0 → 100
        {"j2", 1, 10, 2, "a"},   // does not fit until 100: 100 → 110
        {"j3", 2, 10, 1, "a"}},  // the fourth GPU at once: 2 → 12
       {0, 99, 0},
       {100, 109, 10},
       0,
       0,
       0,
       (3 * 100.0 + 1 * 10 + 2 * 10) / (110 * 4)},
      {"a-gang-waits-whole-and-runs-slower-across-nodes",
       {{"a", 2}},
       2,
       {{"j1", 0, 100, 1, "a"},  // 0 → 100 on either node
                                 // Four GPUs are two pods of 2: the first fits on the idle node,
                                 // the second does not, so neither starts until 100; across two
                                 // nodes it runs 1.5× longer: 100 → 115.
        {"j2", 1, 10, 4, "a"}},
       {0, 99},
       {100, 114},
       0,
       0,
       1,
       (1 * 100.0 + 4 * 15) / (115 * 4)},
  };
}

TEST(Replay, HandComputedTimesForEveryPolicy) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& policy : ReplayPolicyNames()) {
      SCOPED_TRACE(policy);
      ReplayOptions o;
      o.gpus_per_node = c.gpus_per_node;
      const ReplayResult r = Replay(c.vcs, c.jobs, policy, o);
      EXPECT_EQ(r.queue_s, c.queue_s);
      EXPECT_EQ(r.jct_s, c.jct_s);
      EXPECT_EQ(r.completed, static_cast<int>(c.jct_s.size()));
      EXPECT_EQ(r.skipped_no_vc, c.skipped_no_vc);
      EXPECT_EQ(r.skipped_too_big, c.skipped_too_big);
      EXPECT_EQ(r.multi_node, c.multi_node);
      EXPECT_NEAR(r.util_mean, c.util_mean, 1e-12);
    }
  }
}

TEST(Replay, UtilisationPerBucketAndEvents) {
  ReplayOptions o;
  o.gpus_per_node = 2;
  o.util_bucket_s = 100;
  const Case c = Cases().front();
  const ReplayResult r = Replay(c.vcs, c.jobs, "best-fit-milli", o);
  // [0, 100): 2 of 2 GPUs; [100, 150): 2 GPUs for 30 s and 1 for 20 s over 50 s.
  ASSERT_EQ(r.util.size(), 2u);
  EXPECT_DOUBLE_EQ(r.util[0], 1.0);
  EXPECT_DOUBLE_EQ(r.util[1], (2 * 30.0 + 20) / (50 * 2));
  EXPECT_DOUBLE_EQ(r.makespan_s, 150);
  // Three arrivals, three completions and a scheduling cycle at 0, 10, 20, 100,
  // 130 and 150 s (the skipped jobs never arrive).
  EXPECT_EQ(r.events, 12u);
}

// Jobs stay in their VC: one VC full for the whole run, the other a quarter used
// for half of it; the cluster is 250 of 400 GPU-seconds busy over 100 s.
TEST(Replay, PerVcUtilisationAndQueues) {
  ReplayOptions o;
  o.gpus_per_node = 2;
  const ReplayResult r =
      Replay({{"a", 1}, {"b", 1}},
             {{"j1", 0, 100, 2, "a"}, {"j2", 0, 50, 1, "b"}, {"j3", 10, 5, 1, "a"}}, "fgd", o);
  ASSERT_EQ(r.vcs.size(), 2u);
  EXPECT_EQ(r.vcs[0].name, "a");
  EXPECT_EQ(r.vcs[0].queue_s, (std::vector<double>{0, 90}));  // j3 waits for j1, not for b
  EXPECT_EQ(r.vcs[1].queue_s, (std::vector<double>{0}));
  EXPECT_DOUBLE_EQ(r.makespan_s, 105);
  EXPECT_DOUBLE_EQ(r.vcs[0].util_mean, (200.0 + 5) / (105 * 2));
  EXPECT_DOUBLE_EQ(r.vcs[1].util_mean, 50.0 / (105 * 2));
  EXPECT_DOUBLE_EQ(r.util_mean, 255.0 / (105 * 4));
}

TEST(Replay, StatsAreNearestRank) {
  const ReplayStats s = Summarise({5, 1, 3, 2, 4});
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p50, 3);
  EXPECT_DOUBLE_EQ(s.p99, 5);
  const ReplayStats none = Summarise({});
  EXPECT_DOUBLE_EQ(none.p99, 0);
}

TEST(Replay, InputErrors) {
  EXPECT_THROW(Replay({}, {}, "fgd"), InputError);
  try {
    Replay({{"a", 1}}, {}, "tetris");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.message.find("policy \"tetris\": unknown for philly"), std::string::npos);
  }
}

// Every job skipped leaves no pod, so no target workload for fgd: every policy
// still runs (and places nothing).
TEST(Replay, EveryPolicyRunsWhenNoJobHasAPod) {
  for (const auto& policy : ReplayPolicyNames()) {
    SCOPED_TRACE(policy);
    const ReplayResult r = Replay({{"a", 1}}, {{"j1", 0, 10, 1, "nowhere"}}, policy);
    EXPECT_EQ(r.skipped_no_vc, 1);
    EXPECT_EQ(r.completed, 0);
  }
}

TEST(Replay, PhillyRowsBecomeJobsAndVcs) {
  traces::PhillyJob j;
  j.line = 7;
  j.submit_s = 1000;
  j.duration_s = 66;
  j.gpus = 2;
  j.vc = "11cb48";
  const auto jobs = FromPhilly(std::vector<traces::PhillyJob>{j});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id, "philly-7");
  EXPECT_DOUBLE_EQ(jobs[0].submit_s, 1000);
  EXPECT_EQ(jobs[0].gpus, 2);
  const auto vcs = FromPhilly(std::vector<traces::PhillyVc>{{"11cb48", 16}});
  ASSERT_EQ(vcs.size(), 1u);
  EXPECT_EQ(vcs[0].nodes, 16);
}

}  // namespace
}  // namespace tidal::sim
