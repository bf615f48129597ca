#include "tidal/sim/packing_lp.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <vector>

#include "sim/trace_policies.h"
#include "testing/glpsol.h"

namespace tidal::sim {
namespace {

NodeState Node(std::int64_t cpu_milli, int gpus, const std::string& model = "A") {
  return TraceNodeView("n", cpu_milli, 65536, gpus, model);
}
PodDemand Pod(std::int64_t cpu_milli, int gpus, int gpu_milli,
              std::vector<std::string> models = {}) {
  PodDemand p = TracePod("p", "u", cpu_milli, 1024, gpus, gpu_milli);
  p.gpu_models = std::move(models);
  return p;
}
std::vector<PodDemand> Times(int n, const PodDemand& p) { return std::vector<PodDemand>(n, p); }

TEST(PackingLp, WritesOneVariablePerClassAndTypeWhereAPodFits) {
  const std::vector<NodeState> nodes = {Node(8000, 2), Node(8000, 2), Node(4000, 0, "")};
  std::vector<PodDemand> pods = Times(3, Pod(6000, 1, 1000));
  pods.push_back(Pod(1000, 1, 600, {"B"}));  // no node of model B: no variable
  pods.push_back(Pod(2000, 0, 0));           // CPU-only: cannot raise the GPUs allocated
  const PackingLp lp = BuildPackingLp(nodes, pods);
  EXPECT_EQ(lp.classes, 2u);
  EXPECT_EQ(lp.node_types, 1u);
  EXPECT_EQ(lp.variables, 1u);
  EXPECT_EQ(lp.capacity_milli, 4000);
  // Classes in order of CPU request first: 0 is the 600-milli pod, 1 the whole-GPU one.
  EXPECT_EQ(lp.text,
            "\\ tidal packing LP: 2 pod classes, 1 node types, 1 variables, capacity_milli 4000\n"
            "Maximize\n"
            " obj: 1 x1_0\n"
            "Subject To\n"
            " pods1: 1 x1_0 <= 3\n"
            " cpu0: 6 x1_0 <= 16\n"
            " mem0: 1 x1_0 <= 128\n"
            " gpu0: 1 x1_0 <= 4\n"
            " share1_0: 1 x1_0 <= 4\n"
            " share2_0: 1 x1_0 <= 4\n"
            " share3_0: 1 x1_0 <= 4\n"
            " share4_0: 1 x1_0 <= 4\n"
            " share5_0: 1 x1_0 <= 4\n"
            " share6_0: 1 x1_0 <= 4\n"
            " gpus0: 1 x1_0 <= 4\n"
            "Bounds\n"
            "End\n");
}

TEST(PackingLp, ReadsGlpsolsOptimumOnlyWhenOptimal) {
  const std::string head = "Problem:    \nRows:       7\nColumns:    1\n";
  EXPECT_EQ(GlpsolOptimum(head + "Status:     OPTIMAL\nObjective:  obj = 1.333333333 (MAXimum)\n"),
            1.333333333);
  EXPECT_EQ(GlpsolOptimum(head + "Status:     UNDEFINED\nObjective:  obj = 0 (MAXimum)\n"),
            std::nullopt);
  EXPECT_EQ(GlpsolOptimum(head + "Status:     OPTIMAL\n"), std::nullopt);
  EXPECT_EQ(GlpsolOptimum("Status: OPTIMAL\nObjective: obj = x (MAXimum)\n"), std::nullopt);
}

// The LP solved by glpsol.
double SolvedUnallocPct(const std::vector<NodeState>& nodes, const std::vector<PodDemand>& pods) {
  const PackingLp lp = BuildPackingLp(nodes, pods);
  const std::optional<std::string> report = testing::RunGlpsol(lp.text, "-o");
  EXPECT_TRUE(report.has_value()) << "glpsol (apt-get install glpk-utils) on\n" << lp.text;
  const auto optimum = GlpsolOptimum(report.value_or(""));
  EXPECT_TRUE(optimum.has_value()) << report.value_or("");
  return optimum ? LpUnallocatedPct(lp, *optimum) : -1;
}

TEST(PackingLp, BoundsTheUnallocatedGpusOfHandComputedCases) {
  struct Case {
    const char* name;
    std::vector<NodeState> nodes;
    std::vector<PodDemand> pods;
    double want_pct;
  };
  const Case cases[] = {
      {"everything fits", {Node(8000, 4), Node(8000, 4)}, Times(2, Pod(4000, 4, 1000)), 0},
      {"CPU binds: 8 cores hold 4/3 pods of 6",
       {Node(8000, 2)},
       Times(4, Pod(6000, 1, 1000)),
       100.0 / 3},
      {"no node of the model asked for",
       {Node(8000, 1, "A")},
       Times(2, Pod(1000, 1, 1000, {"B"})),
       100},
      {"a pod larger than every node", {Node(8000, 4)}, {Pod(1000, 8, 1000)}, 100},
      {"two shares over half never share a GPU", {Node(8000, 1)}, Times(3, Pod(1000, 1, 600)), 40},
      {"three shares over a third never share a GPU",
       {Node(8000, 1)},
       Times(4, Pod(1000, 1, 400)),
       20},
      // x_whole + x_share ≤ 2 (k = 1): the whole GPU and one 0.6 share.
      {"a share over half beside a whole GPU",
       {Node(8000, 2)},
       {Pod(1000, 1, 1000), Pod(1000, 1, 600), Pod(1000, 1, 600), Pod(1000, 1, 600)},
       20},
      // Beside a 0.81 share only shares up to 0.19 fit: one GPU takes the 0.81, the
      // other the five 0.2 shares (u_4 values 0.81 at 1 and 0.2 at 0.2).
      {"an 0.81 share leaves room for nothing of 0.2",
       {Node(8000, 2)},
       {Pod(1000, 1, 810), Pod(1000, 1, 810), Pod(1000, 1, 200), Pod(1000, 1, 200),
        Pod(1000, 1, 200), Pod(1000, 1, 200), Pod(1000, 1, 200)},
       9.5},
      // Two 0.47 shares fill a GPU to 0.94, and one beside a 0.81 does not fit.
      {"shares that pair badly",
       {Node(8000, 2)},
       {Pod(1000, 1, 810), Pod(1000, 1, 810), Pod(1000, 1, 470), Pod(1000, 1, 470)},
       12.5},
      // The rounding rows allow all three (0%: 0.55 and 0.16 are worth at most 0.5
      // and 0.16 under every u_k). With the ways to fill one GPU the relaxation
      // can only split it: 5/6 as 0.55 + 0.37, 1/6 as six 0.16s (the whole 0.16).
      {"one GPU: 0.55 and 0.37 fill it best, 0.16 fits beside neither",
       {Node(8000, 1)},
       {Pod(1000, 1, 550), Pod(1000, 1, 370), Pod(1000, 1, 160)},
       100 * (1 - (0.92 * 5 / 6 + 0.16))},
      {"CPU-only pods change nothing", {Node(8000, 1)}, {Pod(8000, 0, 0), Pod(1000, 1, 1000)}, 0},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_NEAR(SolvedUnallocPct(tc.nodes, tc.pods), tc.want_pct, 1e-6);
  }
}

// Shares so small that the ways to fill a GPU are too many to list leave the
// rounding rows alone, and the bound still holds (all 40 fit: 18 % unallocated).
TEST(PackingLp, TinySharesFallBackToTheRoundingRows) {
  std::vector<PodDemand> pods;
  for (int milli = 1; milli <= 40; ++milli) pods.push_back(Pod(1000, 1, milli));
  EXPECT_EQ(BuildPackingLp(std::vector<NodeState>{Node(64000, 1)}, pods).fillings, 0u);
  EXPECT_LE(SolvedUnallocPct({Node(64000, 1)}, pods), 18 + 1e-6);
}

// The unallocated % of the best placement of `shares` (milli) on one node of
// `gpus` GPUs, by trying every assignment (a pod on a GPU or left out).
double BestPlacementUnallocPct(int gpus, const std::vector<int>& shares) {
  std::vector<int> choice(shares.size(), 0);
  int best = 0;
  for (;;) {
    std::vector<int> load(static_cast<std::size_t>(gpus), 0);
    bool fits = true;
    int placed = 0;
    for (std::size_t i = 0; i < shares.size() && fits; ++i)
      if (choice[i] < gpus) {
        fits = (load[static_cast<std::size_t>(choice[i])] += shares[i]) <= 1000;
        placed += shares[i];
      }
    if (fits) best = std::max(best, placed);
    std::size_t i = 0;
    while (i < choice.size() && ++choice[i] > gpus) choice[i++] = 0;
    if (i == choice.size()) break;
  }
  return 100.0 * (1 - best / (1000.0 * gpus));
}

// A bound must hold for every placement: on small random cases the LP never
// claims more unallocated than the best placement leaves.
TEST(PackingLp, NeverBoundsAboveTheBestPlacement) {
  const int kShares[] = {110, 160, 230, 320, 370, 470, 550, 650, 810, 1000};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int gpus = 1 + static_cast<int>(rng() % 3);
    std::vector<int> shares(3 + rng() % 4);
    std::vector<PodDemand> pods;
    for (int& share : shares) {
      share = kShares[rng() % std::size(kShares)];
      pods.push_back(Pod(1000, 1, share));
    }
    SCOPED_TRACE(::testing::PrintToString(shares) + " on " + std::to_string(gpus) + " GPUs");
    EXPECT_LE(SolvedUnallocPct({Node(64000, gpus)}, pods),
              BestPlacementUnallocPct(gpus, shares) + 1e-6);
  }
}

// The plan lists, for each share of a filling the LP uses, the levels the rest of
// that filling can make; fillings it does not use add nothing.
TEST(FillPlan, ArgsListTheLevelsTheRestOfEachUsedFillingMakes) {
  FillPlanLp lp;
  lp.sizes = {230, 470};
  lp.fillings = {{0, 2}, {2, 1}, {4, 0}};  // 470+470, 230+230+470, 4×230
  const YAML::Node plan = FillPlanArgs(lp, std::vector<double>{0.5, 0.25, 0});
  YAML::Emitter out;
  out << YAML::Flow << plan;
  EXPECT_STREQ(out.c_str(),
               "[{share: 230, used: [230, 470, 700]}, {share: 470, used: [230, 460, 470]}]");
  // The plan for one model's GPUs names it in each entry.
  YAML::Emitter t4;
  t4 << YAML::Flow << FillPlanArgs(lp, std::vector<double>{0.5, 0, 0}, "T4");
  EXPECT_STREQ(t4.c_str(), "[{share: 470, used: [470], model: T4}]");
}

TEST(FillPlan, ReadsGlpsolsColumnsOnlyWhenOptimal) {
  const std::string head = "c Problem:\nc Status:     OPTIMAL\n";
  struct Case {
    const char* name;
    std::string solution;
    std::optional<std::vector<double>> want;
  };
  const Case cases[] = {
      {"optimal", head + "s bas 1 2 f f 1.5\ni 1 u 1 2\nj 1 b 0.5 0\nj 2 l 0 0.1\ne o f\n",
       std::vector<double>{0.5, 0}},
      {"infeasible", "s bas 1 2 n f 0\nj 1 b 0.5 0\nj 2 l 0 0\n", std::nullopt},
      {"a column missing", "s bas 1 2 f f 1\nj 1 b 0.5 0\n", std::nullopt},
      {"another LP's", "s bas 1 3 f f 1\nj 1 b 0.5 0\nj 2 b 0.5 0\nj 3 b 0 0\n", std::nullopt},
      {"a column out of range", "s bas 1 2 f f 1\nj 1 b 0.5 0\nj 7 b 0.5 0\n", std::nullopt},
      {"not a number", "s bas 1 2 f f 1\nj 1 b x 0\nj 2 b 0 0\n", std::nullopt},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(GlpsolColumns(tc.solution, 2), tc.want);
  }
}

// The LP solved by glpsol: a 0.81 share and a 0.16 share, equally often, fill
// GPUs together (two per GPU), and the plan says so.
TEST(FillPlan, PairsTheSharesThatFillAGpuTogether) {
  const std::vector<FgdTask> tasks = {
      {0, 1, 810, {}, 0.5}, {0, 1, 160, {}, 0.5}, {0, 2, 1000, {}, 0.1}, {4000, 0, 0, {}, 0.1}};
  const FillPlanLp lp = BuildFillPlanLp(tasks);
  EXPECT_EQ(lp.sizes, (std::vector<int>{160, 810}));
  ASSERT_FALSE(lp.text.empty());
  const std::optional<std::string> solution = testing::RunGlpsol(lp.text, "-w");
  ASSERT_TRUE(solution.has_value()) << lp.text;
  const auto y = GlpsolColumns(*solution, lp.fillings.size());
  ASSERT_TRUE(y.has_value()) << *solution;
  YAML::Emitter out;
  out << YAML::Flow << FillPlanArgs(lp, *y);
  EXPECT_STREQ(out.c_str(), "[{share: 160, used: [810]}, {share: 810, used: [160]}]");
  EXPECT_TRUE(BuildFillPlanLp(std::vector<FgdTask>{{0, 1, 1000, {}, 1}}).text.empty());
}

}  // namespace
}  // namespace tidal::sim
