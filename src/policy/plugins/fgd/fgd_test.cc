#include "policy/plugins/fgd/fgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

// Task types used by the hand-computed cases below.
std::vector<FgdTask> Tasks(std::vector<std::string> share_models = {}) {
  return {
      {4000, 1, 500, std::move(share_models), 0.5},  // A: half a GPU
      {4000, 1, 1000, {}, 0.25},                     // B: one whole GPU
      {1000, 0, 0, {}, 0.25},                        // C: CPU only
  };
}

TEST(Fgd, NodeFragmentationByHand) {
  // Free {1000, 500, 0, 300}: 1800 idle.
  struct Case {
    const char* name;
    std::int64_t cpu_left;
    std::vector<std::string> a_models;
    double want;
  };
  const Case cases[] = {
      // A: 2 GPUs fit, 0+300 too small: 150. B: 1 fits, 500+0+300: 200. C: all 1800: 450.
      {"all fit", 8000, {}, 800},
      // A and B lack CPU: all idle counts for them.
      {"CPU short", 3000, {}, 1800},
      // A may not use V100M16: 900 + 200 + 450.
      {"model refused", 8000, {"T4"}, 1550},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::vector<int> free = {1000, 500, 0, 300};
    EXPECT_DOUBLE_EQ(NodeFragmentation(tc.cpu_left, "V100M16", free, Tasks(tc.a_models)), tc.want);
  }
  const std::vector<int> none = {0, 0};
  EXPECT_DOUBLE_EQ(NodeFragmentation(8000, "V100M16", none, Tasks()), 0);
}

// The model table is a lookup, not a new rule: for tasks naming models in every
// combination and nodes of named and unnamed models, the fragmentation through it
// equals the plain one, which compares each task's models.
TEST(Fgd, TaskModelTableAnswersAsThePlainComparison) {
  const std::vector<std::vector<std::string>> model_lists = {
      {}, {"T4"}, {"V100M16"}, {"T4", "V100M16"}, {"A10", "T4"}, {"V100M16", "P100", "G2"}};
  std::vector<FgdTask> tasks;
  for (std::size_t i = 0; i < model_lists.size(); ++i)
    for (const int milli : {250, 500, 1000})
      tasks.push_back({1000 * static_cast<std::int64_t>(i % 4), milli == 1000 ? 2 : 1, milli,
                       model_lists[i], 1.0 / 18});
  tasks.push_back({500, 0, 0, {}, 0.01});  // CPU only
  const TaskModelTable table(tasks);
  const std::vector<std::vector<int>> frees = {
      {1000, 500, 0, 300}, {1000, 1000}, {250, 0, 750, 0}, {0, 0, 0, 0}};
  int compared = 0;
  for (const std::string model : {"V100M16", "T4", "A10", "P100", "G2", "G3", "", "V100M32"})
    for (const auto& free : frees)
      for (const std::int64_t cpu : {0, 1500, 8000}) {
        SCOPED_TRACE(model + " cpu " + std::to_string(cpu));
        EXPECT_EQ(NodeFragmentationAccepting(cpu, table.Accepted(model), free, tasks),
                  NodeFragmentation(cpu, model, free, tasks));
        ++compared;
      }
  EXPECT_EQ(compared, 8 * 4 * 3);
  // An unnamed model is accepted by exactly the tasks without models.
  const std::span<const char> other = table.Accepted("H100");
  for (std::size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(other[i] != 0, tasks[i].models.empty());
}

// The share table is a layout, not a new rule: for workloads of every kind and
// random nodes of 0 to 8 GPUs, its fragmentation equals the plain per-task,
// per-GPU sum to the bit.
TEST(Fgd, TaskShareTableAnswersAsThePlainSum) {
  struct Case {
    const char* name;
    int types;
    int distinct_shares;  // per-GPU shares drawn from this many values
    bool cpu_only_and_zero_shares;
  };
  const std::vector<Case> cases = {
      {"one type", 1, 1, false},
      {"openb-like: many types, few shares", 200, 8, false},
      {"CPU-only types and a zero share", 40, 5, true},
      {"more shares than are counted up front", 400, 400, false},
  };
  const std::vector<std::string> models = {"A10", "T4", "V100M16"};
  std::mt19937 rng(7);
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::vector<FgdTask> tasks;
    for (int i = 0; i < tc.types; ++i) {
      FgdTask t;
      t.cpu_milli = 1000 * static_cast<std::int64_t>(rng() % 9);
      t.gpus = 1 + static_cast<int>(rng() % 4);
      t.gpu_milli = 1 + static_cast<int>(rng() % tc.distinct_shares) * 997 / tc.distinct_shares;
      if (tc.cpu_only_and_zero_shares && i % 4 == 0) t.gpus = 0;
      if (tc.cpu_only_and_zero_shares && i % 4 == 1) t.gpu_milli = 0;
      if (rng() % 3 == 0) t.models = {models[rng() % models.size()]};
      t.weight = 1.0 / (1 + rng() % 50);
      tasks.push_back(t);
    }
    const TaskShareTable shares(tasks);
    const TaskModelTable table(tasks);
    for (int node = 0; node < 2000; ++node) {
      std::vector<int> free(rng() % 9);
      for (int& f : free) f = rng() % 3 == 0 ? 1000 : static_cast<int>(rng() % 1001);
      const std::string& model = models[rng() % models.size()];
      const std::int64_t cpu = 500 * static_cast<std::int64_t>(rng() % 20);
      const std::span<const char> accepted = table.Accepted(model);
      ASSERT_EQ(shares.Fragmentation(cpu, accepted, free),
                NodeFragmentationAccepting(cpu, accepted, free, tasks))
          << "node " << node;
    }
  }
  // A task whose share no GPU has free leaves the whole idle share a fragment.
  const std::vector<FgdTask> half = {{0, 1, 500, {}, 1.0}};
  const std::vector<int> free = {300, 200};
  const std::vector<char> any = {1};
  EXPECT_EQ(TaskShareTable(half).Fragmentation(0, any, free), 500);
}

TEST(Fgd, ChoosesTheGpuThatGrowsFragmentationLeast) {
  struct Case {
    const char* name;
    int gpus, milli;
    int want_gpu;
    double want_score;
  };
  // F before = 800 (see above); pod CPU 1000.
  const Case cases[] = {
      // GPU1 500→0 leaves {1000,0,0,300}: 150 + 75 + 325 = 550, Δ 250: trunc(100·σ(0.25)) = 56.
      {"half GPU", 1, 500, 1, 56},
      // GPU3 300→0 leaves {1000,500,0,0}: 0 + 125 + 375 = 500, Δ 300: 57 (GPU1 gives 51, GPU0 47).
      {"small share", 1, 300, 3, 57},
      // GPU0 1000→0: {0,500,0,300}: 150 + 800·0.25 + 200 = 550, Δ 250: 56.
      {"whole GPU", 1, 1000, 0, 56},
  };
  FgdArgs args;
  args.tasks = Tasks();
  const Fgd plugin(args);
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node =
        NodeBuilder("n").MilliFree({1000, 500, 0, 300}).Resources(8000, 64 * kGi).Build();
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Requests(1000, kGi).Build();
    const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
    NodeScratch scratch;
    ASSERT_TRUE(plugin.FilterOne(cycle, node, scratch).ok());
    EXPECT_EQ(scratch.gpus.Indices(), std::vector<int>{tc.want_gpu});
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, scratch), tc.want_score);
  }
}

// The filter's score of the GPU it chose is the score's answer while the scratch
// still holds that GPU; once another placer holds other GPUs, the score measures
// those. Same node as above, pod of 300 milli: GPU3 scores 57, GPU1 51.
TEST(Fgd, TheScoreReusesTheFiltersOnlyForTheGpusItScored) {
  FgdArgs args;
  args.tasks = Tasks();
  const Fgd plugin(args);
  const NodeState node =
      NodeBuilder("n").MilliFree({1000, 500, 0, 300}).Resources(8000, 64 * kGi).Build();
  const PodDemand pod = PodBuilder().Milli(1, 300).Requests(1000, kGi).Build();
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  NodeScratch filtered;
  ASSERT_TRUE(plugin.FilterOne(cycle, node, filtered).ok());
  EXPECT_EQ(filtered.scored_gpus.Indices(), std::vector<int>{3});
  EXPECT_DOUBLE_EQ(filtered.placer_score, 57);
  NodeScratch unscored;
  unscored.gpus = filtered.gpus;
  unscored.placed = true;
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, unscored), 57);
  NodeScratch moved = filtered;  // another placer chose GPU1 after fgd's filter
  moved.gpus = GpuSet(std::uint64_t{1} << 1);
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, moved), 51);
  NodeScratch reused = filtered;
  reused.placer_score = 12;  // what the score returns is the filter's, unmeasured
  EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, reused), 12);
  // Another fgd (here with the default workload) measures for itself.
  const Fgd other{FgdArgs{}};
  EXPECT_DOUBLE_EQ(other.ScoreOne(cycle, node, reused), other.ScoreOne(cycle, node, unscored));
  EXPECT_NE(other.ScoreOne(cycle, node, reused), 12);
}

// A CPU-only pod takes no GPU, but the CPU it takes can shut GPU task types out
// of a node's free GPUs: FGD then counts them as fragments.
TEST(Fgd, ACpuOnlyPodScoresByTheGpuTasksItsCpuShutsOut) {
  FgdArgs args;
  args.tasks = Tasks();
  const Fgd plugin(args);
  const PodDemand pod = PodBuilder().Requests(5000, kGi).Build();  // no GPU
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  struct Case {
    const char* name;
    std::vector<int> free;
    std::int64_t cpu;
    double want;
  };
  const Case cases[] = {
      // F before 800 (above). 3000 m left: A and B (4000 m each) no longer fit, so
      // all 1800 idle is a fragment to every type: Δ −1000, trunc(100·σ(−1)) = 26.
      {"CPU becomes short", {1000, 500, 0, 300}, 8000, 26},
      // 59000 m left: F stays 800, Δ 0: 50.
      {"CPU to spare", {1000, 500, 0, 300}, 64000, 50},
      // No free GPU share: F is 0 before and after: 50.
      {"no GPU free", {0, 0}, 8000, 50},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node = NodeBuilder("n").MilliFree(tc.free).Resources(tc.cpu, 64 * kGi).Build();
    NodeScratch scratch;
    ASSERT_TRUE(plugin.FilterOne(cycle, node, scratch).ok());
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(cycle, node, scratch), tc.want);
  }
}

TEST(Fgd, RejectsWhenNoGpuFits) {
  FgdArgs args;
  args.tasks = Tasks();
  const Fgd plugin(args);
  const NodeState node = NodeBuilder("n").MilliFree({200, 1000}).Resources(8000, 64 * kGi).Build();
  NodeScratch s1, s2, s3;
  EXPECT_TRUE(
      plugin.FilterOne(Cycle(DefaultPolicyConfig(), PodBuilder().Milli(1, 300).Build()), node, s1)
          .ok());
  EXPECT_EQ(s1.gpus.Indices(), std::vector<int>{1});  // the only GPU with room
  const NodeState full = NodeBuilder("n").MilliFree({200, 100}).Resources(8000, 64 * kGi).Build();
  EXPECT_EQ(
      plugin.FilterOne(Cycle(DefaultPolicyConfig(), PodBuilder().Milli(1, 300).Build()), full, s2)
          .reason(),
      "no GPU with 300 milli-GPU free");
  EXPECT_EQ(
      plugin.FilterOne(Cycle(DefaultPolicyConfig(), PodBuilder().Milli(2, 1000).Build()), node, s3)
          .reason(),
      "not enough free GPUs");
}

// With a fill plan a sharing pod goes first to a GPU where the plan puts its
// share, then to an empty GPU, and only then elsewhere; FGD orders within each.
TEST(Fgd, AFillPlanPlacesASharePlannedFirstThenOnAnEmptyGpu) {
  // GPUs with 470, 810 and nothing used; the pod asks for 160.
  const NodeState node =
      NodeBuilder("n").MilliFree({530, 190, 1000}).Resources(64000, 64 * kGi).Build();
  const NodeState empty = NodeBuilder("e").MilliFree({1000}).Resources(64000, 64 * kGi).Build();
  const PodDemand pod = PodBuilder().Milli(1, 160).Requests(1000, kGi).Build();
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  struct Case {
    const char* name;
    const char* plan;
    int want_gpu;
    bool node_beats_empty;  // the node scores above a node with one empty GPU
  };
  const Case cases[] = {
      {"beside the 810", "[{share: 160, used: [810]}]", 1, true},
      {"beside the 470", "[{share: 160, used: [470]}]", 0, true},
      {"not planned where it could go: the empty GPU", "[{share: 160, used: [100]}]", 2, false},
      {"another share's plan only", "[{share: 810, used: [160]}]", 2, false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    const FgdArgs args = FgdArgs::Parse(
        YAML::Load(std::string("{tasks: [{gpus: 1, gpuMilli: 160, weight: 1}], fillPlan: ") +
                   tc.plan + "}"),
        "a", errors);
    ASSERT_TRUE(errors.empty());
    const Fgd fgd(args);
    NodeScratch s, e;
    ASSERT_TRUE(fgd.FilterOne(cycle, node, s).ok());
    ASSERT_TRUE(fgd.FilterOne(cycle, empty, e).ok());
    EXPECT_EQ(s.gpus.Indices(), std::vector<int>{tc.want_gpu});
    EXPECT_EQ(fgd.ScoreOne(cycle, node, s) > fgd.ScoreOne(cycle, empty, e), tc.node_beats_empty);
    EXPECT_LE(fgd.ScoreOne(cycle, node, s), 100);
  }
  // Without a plan, FGD alone: the GPU whose leftover fragments least for a 160.
  FgdArgs plain;
  plain.tasks = {{0, 1, 160, {}, 1.0}};
  NodeScratch s;
  ASSERT_TRUE(Fgd(plain).FilterOne(cycle, node, s).ok());
  EXPECT_EQ(s.gpus.Indices(), std::vector<int>{0});
}

TEST(Fgd, TypicalTasksByPopularity) {
  std::vector<PodDemand> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(PodBuilder().Milli(1, 500).Requests(1000, 0).Build());
  pods.push_back(PodBuilder().Milli(0, 0).Requests(2000, 0).Build());
  pods.push_back(PodBuilder().Milli(1, 1000).Requests(4000, 0).Build());
  struct Case {
    const char* name;
    double pct;
    std::vector<double> weights;
  };
  const Case cases[] = {
      {"60% is covered by the top type", 60, {1.0}},
      // Ties: the larger type first (4000 CPU before 2000 CPU).
      {"95% needs all three", 95, {0.6, 0.2, 0.2}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto t = TypicalTasks(pods, tc.pct);
    ASSERT_EQ(t.size(), tc.weights.size());
    for (std::size_t i = 0; i < t.size(); ++i) EXPECT_DOUBLE_EQ(t[i].weight, tc.weights[i]);
    EXPECT_EQ(t[0].gpu_milli, 500);
    if (t.size() == 3) {
      EXPECT_EQ(t[1].cpu_milli, 4000);
      EXPECT_EQ(t[2].gpus, 0);
    }
  }
}

// The online learner, by hand. Pods: A (one whole GPU), B (half a GPU), C (CPU only).
TEST(Fgd, TaskTypeLearnerWeighsTheNewestMost) {
  const PodDemand a = PodBuilder().Milli(1, 1000).Requests(4000, 0).Build();
  const PodDemand b = PodBuilder().Milli(1, 500).Requests(1000, 0).Build();
  const PodDemand c = PodBuilder().Milli(0, 0).Requests(2000, 0).Build();
  struct Case {
    const char* name;
    double half_life;
    std::size_t max_types;
    std::vector<PodDemand> pods;
    std::vector<int> want_milli;  // per learned type, heaviest first
    std::vector<double> want_weight;
  };
  const double r2 = std::sqrt(2.0);
  const Case cases[] = {
      {"no decay: counts", 0, 8, {a, b, b}, {500, 1000}, {2.0 / 3, 1.0 / 3}},
      {"half-life 1: each pod twice the one before",
       1,
       8,
       {b, b, a},
       {1000, 500},
       {4.0 / 7, 3.0 / 7}},
      // weights 1, √2, 2: A has 1 + √2, B 2.
      {"half-life 2", 2, 8, {a, a, b}, {1000, 500}, {(1 + r2) / (3 + r2), 2 / (3 + r2)}},
      // C replaces A, the lightest, when a third type arrives with room for two.
      {"bounded: the lightest is forgotten", 0, 2, {a, b, b, c}, {500, 0}, {2.0 / 3, 1.0 / 3}},
      {"nothing seen", 0, 8, {}, {}, {}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    TaskTypeLearner learner(tc.half_life, tc.max_types);
    for (const auto& p : tc.pods) learner.Observe(p);
    const auto tasks = learner.Tasks(100);
    ASSERT_EQ(tasks.size(), tc.want_milli.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      EXPECT_EQ(tasks[i].gpu_milli, tc.want_milli[i]);
      EXPECT_NEAR(tasks[i].weight, tc.want_weight[i], 1e-12);
    }
    EXPECT_LE(learner.types(), tc.max_types);
    EXPECT_EQ(learner.pods_seen(), tc.pods.size());
  }
}

// A workload that changes is followed at the pace of the half-life; without decay
// the past keeps its weight. The weights are rescaled long before they overflow.
TEST(Fgd, TaskTypeLearnerFollowsAShift) {
  const PodDemand a = PodBuilder().Milli(1, 1000).Requests(4000, 0).Build();
  const PodDemand b = PodBuilder().Milli(1, 500).Requests(1000, 0).Build();
  TaskTypeLearner decayed(50), counted;
  for (int i = 0; i < 1000; ++i) {
    decayed.Observe(a);
    counted.Observe(a);
  }
  for (int i = 0; i < 200; ++i) {
    decayed.Observe(b);
    counted.Observe(b);
  }
  auto share_of_b = [](const TaskTypeLearner& l) {
    for (const auto& t : l.Tasks(100))
      if (t.gpu_milli == 500) return t.weight;
    return 0.0;
  };
  EXPECT_GT(share_of_b(decayed), 0.9);  // four half-lives: A weighs 1/16 of what it did
  EXPECT_NEAR(share_of_b(counted), 200.0 / 1200, 1e-12);
  // 2 000 pods at half-life 1 grow each pod's weight by 2^2000: rescaled, still exact.
  TaskTypeLearner fast(1);
  for (int i = 0; i < 2000; ++i) fast.Observe(i % 2 == 0 ? a : b);
  EXPECT_NEAR(share_of_b(fast), 2.0 / 3, 1e-9);
}

// tieBreak: pack orders nodes of equal FGD score by the share of their GPUs
// allocated once the pod is placed (0.99 × that share added to the score), and
// never reorders nodes whose FGD scores differ. Target workload: one whole GPU.
TEST(Fgd, PackTieBreakPrefersTheFullestOfEqualNodes) {
  struct Case {
    const char* name;
    std::vector<int> free;
    int gpus, milli;
    double plain, pack;
  };
  const Case cases[] = {
      // Whole GPU on an idle 4-GPU node: F 0 → 0, 50; allocated after 1/4.
      {"idle 4-GPU node", {1000, 1000, 1000, 1000}, 1, 1000, 50, 50 + 0.99 * 0.25},
      // Half used: allocated after 3/4.
      {"half used", {1000, 1000, 0, 0}, 1, 1000, 50, 50 + 0.99 * 0.75},
      // The last free GPU of 8: allocated after 1.
      {"last GPU", {1000, 0, 0, 0, 0, 0, 0, 0}, 1, 1000, 50, 50 + 0.99},
      // Half a GPU onto the half-free GPU: F 500 → 0, Δ 500: trunc(100·σ(0.5)) = 62.
      {"closes a half GPU", {1000, 500}, 1, 500, 62, 62 + 0.99 * 0.5},
      // The last half GPU of 8: F 500 → 0, 62; allocated after 1.
      {"closes the last half", {500, 0, 0, 0, 0, 0, 0, 0}, 1, 500, 62, 62 + 0.99},
      // Half a GPU on an idle pair: F 0 → 500, Δ −500: 37, whatever the pack term.
      {"opens a half GPU", {1000, 1000}, 1, 500, 37, 37 + 0.99 * 0.25},
  };
  FgdArgs plain_args, pack_args;
  plain_args.tasks = pack_args.tasks = {{0, 1, 1000, {}, 1.0}};
  pack_args.tie_break = FgdTieBreak::kPack;
  const Fgd plain(plain_args), pack(pack_args);
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node = NodeBuilder("n").MilliFree(tc.free).Resources(8000, 64 * kGi).Build();
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Requests(1000, kGi).Build();
    const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
    NodeScratch a, b;
    ASSERT_TRUE(plain.FilterOne(cycle, node, a).ok());
    ASSERT_TRUE(pack.FilterOne(cycle, node, b).ok());
    EXPECT_EQ(a.gpus.Indices(), b.gpus.Indices());  // the tie-break never moves the GPU
    EXPECT_DOUBLE_EQ(plain.ScoreOne(cycle, node, a), tc.plain);
    EXPECT_DOUBLE_EQ(pack.ScoreOne(cycle, node, b), tc.pack);
  }
}

// scoreStep rounds the truncated score down to a multiple of the step (the cases
// of PackTieBreakPrefersTheFullestOfEqualNodes: 62, 50 and 37 with step 1), and
// wholeGpuScoreStep does so for pods of whole GPUs only: sharing and CPU-only
// pods keep scoreStep. Target workload: one whole GPU (CPU 0), so a CPU-only pod
// neither makes nor closes a fragment (50).
TEST(Fgd, ScoreStepsRoundDown) {
  struct Case {
    const char* name;
    std::vector<int> free;
    int gpus, milli;
    int step, whole_step;
    double want;
  };
  const Case cases[] = {
      {"62, step 1", {1000, 500}, 1, 500, 1, 0, 62},
      {"62, step 2", {1000, 500}, 1, 500, 2, 0, 62},
      {"62, step 5", {1000, 500}, 1, 500, 5, 0, 60},
      {"37, step 2", {1000, 1000}, 1, 500, 2, 0, 36},
      {"50, step 3", {1000, 1000, 1000, 1000}, 1, 1000, 3, 0, 48},
      // Half a GPU closing a half-free GPU: 62, a sharing pod: scoreStep.
      {"sharing pod, whole step 3", {1000, 500}, 1, 500, 1, 3, 62},
      {"sharing pod, step 5, whole step 3", {1000, 500}, 1, 500, 5, 3, 60},
      // A whole GPU neither adds nor closes a fragment: 50.
      {"whole GPU, whole step 3", {1000, 1000, 1000, 1000}, 1, 1000, 1, 3, 48},
      {"whole GPU, whole step 0: step 2", {1000, 1000, 1000, 1000}, 1, 1000, 2, 0, 50},
      {"two whole GPUs, whole step 7", {1000, 1000, 1000, 500}, 2, 1000, 1, 7, 49},
      {"CPU-only pod, whole step 3", {1000, 1000}, 0, 0, 1, 3, 50},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    FgdArgs args;
    args.tasks = {{0, 1, 1000, {}, 1.0}};
    args.score_step = tc.step;
    args.whole_gpu_score_step = tc.whole_step;
    const Fgd fgd(args);
    const NodeState node = NodeBuilder("n").MilliFree(tc.free).Resources(8000, 64 * kGi).Build();
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Requests(1000, kGi).Build();
    const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);  // keeps a pointer to pod
    NodeScratch scratch;
    ASSERT_TRUE(fgd.FilterOne(cycle, node, scratch).ok());
    EXPECT_DOUBLE_EQ(fgd.ScoreOne(cycle, node, scratch), tc.want);
  }
}

// With the default target workload (one whole GPU, no CPU, any model) a pod
// that shares no GPU changes no node's fragmentation: fgd skips it (the runner
// leaves it out of the mean) and would score every node 50.
TEST(Fgd, SkipsPodsItHasNothingToSayAbout) {
  struct Case {
    const char* name;
    std::vector<FgdTask> tasks;  // empty: the default
    FgdTieBreak tie_break;
    int gpus, milli;
    bool skips;
  };
  const std::vector<FgdTask> half = {{0, 1, 500, {}, 1.0}};
  const std::vector<FgdTask> with_cpu = {{4000, 1, 1000, {}, 1.0}};
  const std::vector<FgdTask> with_model = {{0, 1, 1000, {"T4"}, 1.0}};
  const std::vector<FgdTask> two_gpus = {{0, 2, 1000, {}, 1.0}};
  const Case cases[] = {
      {"whole GPU, default workload", {}, FgdTieBreak::kNone, 1, 1000, true},
      {"four whole GPUs", {}, FgdTieBreak::kNone, 4, 1000, true},
      {"CPU-only pod", {}, FgdTieBreak::kNone, 0, 0, true},
      {"a sharing pod", {}, FgdTieBreak::kNone, 1, 500, false},
      {"pack tie-break", {}, FgdTieBreak::kPack, 1, 1000, false},
      {"half-GPU tasks", half, FgdTieBreak::kNone, 1, 1000, false},
      {"tasks with CPU", with_cpu, FgdTieBreak::kNone, 1, 1000, false},
      {"tasks bound to a model", with_model, FgdTieBreak::kNone, 1, 1000, false},
      {"two-GPU tasks", two_gpus, FgdTieBreak::kNone, 1, 1000, false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    FgdArgs args = FgdArgs::Parse(YAML::Node(), "fgd", errors);
    if (!tc.tasks.empty()) args.tasks = tc.tasks;
    args.tie_break = tc.tie_break;
    const Fgd fgd(args);
    const PodDemand pod = PodBuilder().Milli(tc.gpus, tc.milli).Requests(1000, kGi).Build();
    const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
    EXPECT_EQ(fgd.SkipsScore(cycle), tc.skips);
    if (!tc.skips || tc.gpus != 1) continue;
    // Skipped for a reason: every node scores 50 (idle, partly used, nearly full).
    for (const std::vector<int>& free :
         std::vector<std::vector<int>>{{1000, 1000, 1000, 1000},
                                       {1000, 300, 1000, 0},
                                       {1000, 1000, 1000, 1000, 0, 0, 0, 0}}) {
      const NodeState node = NodeBuilder("n").MilliFree(free).Resources(8000, 64 * kGi).Build();
      NodeScratch scratch;
      ASSERT_TRUE(fgd.FilterOne(cycle, node, scratch).ok());
      EXPECT_DOUBLE_EQ(fgd.ScoreOne(cycle, node, scratch), 50);
    }
  }
}

// With `tasks: learned` the target workload is the cycle's (what the scheduler
// has learned), until something is learned the args'. Node "used" has one of 4
// GPUs taken, "empty" none; the pod takes one whole GPU. Learned workload: one
// whole GPU (0.5) and four whole GPUs (0.5), no CPU. By hand: on "used" F goes
// from 0.5 · 3000 (three GPUs free, too few for a 4-GPU task) to 0.5 · 2000, so
// trunc(100 · sigmoid(0.5)) = 62; on "empty" from 0 to 0.5 · 3000, so
// trunc(100 · sigmoid(-1.5)) = 18. Node "full" has no GPU free: rejected, unless
// onlyWithTidalDevicePlugin keeps the plugin idle.
TEST(Fgd, LearnedTasksComeFromTheCycle) {
  const auto learned = std::make_shared<const TargetWorkload>(
      std::vector<FgdTask>{{0, 1, 1000, {}, 0.5}, {0, 4, 1000, {}, 0.5}});
  const auto nothing = std::make_shared<const TargetWorkload>(std::vector<FgdTask>{});
  struct Case {
    const char* name;
    const char* args;
    std::shared_ptr<const TargetWorkload> workload;
    bool carried_out;  // CycleState::gpu_choice_carried_out
    bool skips, full_fits;
    double used, empty;  // scores
  };
  const char* const waits = "{tasks: learned, onlyWithTidalDevicePlugin: true}";
  const Case cases[] = {
      {"configured tasks: the cycle's are not read", "{}", learned, true, true, false, 50, 50},
      {"learned, nothing learned yet", "{tasks: learned}", nullptr, true, true, false, 50, 50},
      {"learned, an empty workload", "{tasks: learned}", nothing, true, true, false, 50, 50},
      {"learned", "{tasks: learned}", learned, true, false, false, 62, 18},
      // onlyWithTidalDevicePlugin: until the cycle says the nodes give pods the
      // GPUs chosen, every node passes (even one it would reject) and the pod is
      // skipped; then as without it.
      {"learned, no GPU choice seen carried out", waits, learned, false, true, true, 50, 50},
      {"learned, GPU choices carried out", waits, learned, true, false, false, 62, 18},
      {"without the arg, whatever the cycle says", "{tasks: learned}", learned, false, false, false,
       62, 18},
  };
  const NodeState used =
      NodeBuilder("used").MilliFree({0, 1000, 1000, 1000}).Resources(8000, 64 * kGi).Build();
  const NodeState empty =
      NodeBuilder("empty").MilliFree({1000, 1000, 1000, 1000}).Resources(8000, 64 * kGi).Build();
  const NodeState full =
      NodeBuilder("full").MilliFree({0, 0, 0, 0}).Resources(8000, 64 * kGi).Build();
  const PodDemand pod = PodBuilder().Milli(1, 1000).Requests(1000, kGi).Build();
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    const Fgd fgd(FgdArgs::Parse(YAML::Load(tc.args), "fgd", errors));
    ASSERT_TRUE(errors.items().empty());
    CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
    cycle.workload = tc.workload;
    cycle.gpu_choice_carried_out = tc.carried_out;
    EXPECT_EQ(fgd.SkipsScore(cycle), tc.skips);
    NodeScratch on_used, on_empty, on_full;
    ASSERT_TRUE(fgd.FilterOne(cycle, used, on_used).ok());
    ASSERT_TRUE(fgd.FilterOne(cycle, empty, on_empty).ok());
    EXPECT_EQ(fgd.FilterOne(cycle, full, on_full).ok(), tc.full_fits);
    EXPECT_DOUBLE_EQ(fgd.ScoreOne(cycle, used, on_used), tc.used);
    EXPECT_DOUBLE_EQ(fgd.ScoreOne(cycle, empty, on_empty), tc.empty);
  }
}

// A node whose GPUs are not known (in the extender, a node without metrics) is
// not the measure's to reject: the fit plugins judge it, and it scores 50.
TEST(Fgd, ANodeWithoutKnownGpusIsLeftToTheFitPlugins) {
  ConfigErrors errors;
  const Fgd fgd(FgdArgs::Parse(YAML::Load("{tasks: learned}"), "fgd", errors));
  const PodDemand pod = PodBuilder().Milli(2, 1000).Build();
  CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  cycle.workload = std::make_shared<const TargetWorkload>(
      std::vector<FgdTask>{{0, 1, 1000, {}, 0.5}, {0, 4, 1000, {}, 0.5}});
  const NodeState unknown = NodeBuilder("unknown").Resources(8000, 64 * kGi).Build();
  ASSERT_TRUE(unknown.gpus.empty());
  NodeScratch scratch;
  EXPECT_TRUE(fgd.FilterOne(cycle, unknown, scratch).ok());
  EXPECT_DOUBLE_EQ(fgd.ScoreOne(cycle, unknown, scratch), 50);
  // With GPUs known and too few free, it still rejects.
  const NodeState full = NodeBuilder("full").MilliFree({0, 1000}).Resources(8000, 64 * kGi).Build();
  NodeScratch on_full;
  EXPECT_EQ(fgd.FilterOne(cycle, full, on_full).code(), Code::kUnfit);
}

// The learner a scheduler runs: GPU pods only, published for readers, bounded.
TEST(Fgd, WorkloadLearnerLearnsGpuPodsOnly) {
  WorkloadLearner learner(/*half_life_pods=*/0, /*max_types=*/2, /*popularity_pct=*/95,
                          /*scarcity_exponent=*/0);
  EXPECT_EQ(learner.Current(), nullptr);
  learner.Observe(PodBuilder().Requests(2000, kGi).Build());  // CPU only
  EXPECT_EQ(learner.Current(), nullptr);
  EXPECT_EQ(learner.pods_seen(), 0u);
  for (int i = 0; i < 3; ++i) learner.Observe(PodBuilder().Milli(1, 1000).Build());
  auto w = learner.Current();
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->tasks.size(), 1u);
  EXPECT_TRUE(w->one_whole_gpu) << "one whole GPU, no CPU: FGD's default workload";
  learner.Observe(PodBuilder().Milli(4, 1000).Build());
  w = learner.Current();
  ASSERT_EQ(w->tasks.size(), 2u);
  EXPECT_EQ(w->tasks[0].gpus, 1);
  EXPECT_DOUBLE_EQ(w->tasks[0].weight, 0.75);
  EXPECT_EQ(w->tasks[1].gpus, 4);
  EXPECT_DOUBLE_EQ(w->tasks[1].weight, 0.25);
  EXPECT_FALSE(w->one_whole_gpu);
  // A third type replaces the lightest: at most 2 kept.
  learner.Observe(PodBuilder().Milli(2, 1000).Build());
  w = learner.Current();
  EXPECT_EQ(w->tasks.size(), 2u);
  EXPECT_EQ(learner.pods_seen(), 5u);
  // Whether GPU choices are carried out is noted apart from the pods learned.
  EXPECT_FALSE(learner.GpuChoiceCarriedOut());
  learner.NoteGpuChoiceCarriedOut();
  EXPECT_TRUE(learner.GpuChoiceCarriedOut());
}

// A task type's supply is the nodes one pod of it fits on now. "t4": two whole
// T4s, 8 cores left; "v100-a": V100 GPUs with 1000 and 300 free, 8 cores;
// "v100-b": V100 GPUs with 500 and 0 free, 2 cores left.
TEST(Fgd, WeighByScarcityByHand) {
  const std::vector<NodeState> built = {
      NodeBuilder("t4").MilliFree({1000, 1000}, "T4").Resources(8000, 64 * kGi).Build(),
      NodeBuilder("v100-a").MilliFree({1000, 300}).Resources(8000, 64 * kGi).Build(),
      NodeBuilder("v100-b").MilliFree({500, 0}).Resources(8000, 64 * kGi, 6000).Build(),
  };
  const std::vector<const NodeState*> nodes = {&built[0], &built[1], &built[2]};
  const std::vector<FgdTask> tasks = {
      {1000, 1, 500, {}, 0.4},            // half a GPU: fits all three
      {1000, 2, 1000, {}, 0.3},           // two whole GPUs: t4 only
      {4000, 1, 1000, {"V100M16"}, 0.2},  // a whole V100 and 4 cores: v100-a only
      {1000, 8, 1000, {}, 0.05},          // eight GPUs: nowhere, counted as one node
      {3000, 0, 0, {}, 0.05},             // 3 cores, no GPU: t4 and v100-a
  };
  const std::size_t want_nodes[] = {3, 1, 1, 0, 2};
  for (std::size_t i = 0; i < tasks.size(); ++i)
    EXPECT_EQ(NodesFitting(tasks[i], nodes), want_nodes[i]) << "task " << i;

  struct Case {
    const char* name;
    double exponent;
    std::vector<double> raw;  // weight / supply^exponent, before re-normalising
  };
  const Case cases[] = {
      {"off", 0, {0.4, 0.3, 0.2, 0.05, 0.05}},
      {"per node", 1, {0.4 / 3, 0.3, 0.2, 0.05, 0.05 / 2}},
      {"square root", 0.5, {0.4 / std::sqrt(3.0), 0.3, 0.2, 0.05, 0.05 / std::sqrt(2.0)}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    double total = 0;
    for (double r : tc.raw) total += r;
    const std::vector<FgdTask> weighed = WeighByScarcity(tasks, nodes, tc.exponent);
    ASSERT_EQ(weighed.size(), tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      EXPECT_NEAR(weighed[i].weight, tc.raw[i] / total, 1e-12) << "task " << i;
      EXPECT_EQ(weighed[i].models, tasks[i].models);
      EXPECT_EQ(weighed[i].gpus, tasks[i].gpus);
    }
  }
  EXPECT_TRUE(WeighByScarcity({}, nodes, 1).empty());
}

// NodesFittingEach counts every task in one pass over the nodes; NodesFitting,
// one task at a time, is its oracle. Random nodes (0-8 GPUs, three models, CPU
// partly taken) and random tasks, CPU-only and model-bound ones among them.
TEST(Fgd, NodesFittingEachCountsAsOneTaskAtATime) {
  struct Case {
    const char* name;
    int types;
    int nodes;
  };
  const Case cases[] = {{"no task", 0, 50}, {"no node", 20, 0}, {"many of both", 120, 1500}};
  const std::vector<std::string> models = {"A10", "T4", "V100M16"};
  std::mt19937 rng(11);
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::vector<FgdTask> tasks;
    for (int i = 0; i < tc.types; ++i) {
      FgdTask t;
      t.cpu_milli = 1000 * static_cast<std::int64_t>(rng() % 9);
      t.gpus = i % 5 == 0 ? 0 : 1 + static_cast<int>(rng() % 8);
      t.gpu_milli = t.gpus == 0 ? 0 : 1 + static_cast<int>(rng() % 1000);
      if (rng() % 3 == 0) t.models = {models[rng() % models.size()]};
      t.weight = 1;
      tasks.push_back(t);
    }
    std::vector<NodeState> built;
    for (int n = 0; n < tc.nodes; ++n) {
      std::vector<int> free(rng() % 9);
      for (int& f : free) f = rng() % 3 == 0 ? 1000 : static_cast<int>(rng() % 1001);
      built.push_back(NodeBuilder("n" + std::to_string(n))
                          .MilliFree(free, models[rng() % models.size()])
                          .Resources(8000, 64 * kGi, 500 * static_cast<std::int64_t>(rng() % 17))
                          .Build());
    }
    std::vector<const NodeState*> nodes;
    for (const NodeState& n : built) nodes.push_back(&n);
    const std::vector<std::size_t> each = NodesFittingEach(tasks, nodes);
    ASSERT_EQ(each.size(), tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i)
      EXPECT_EQ(each[i], NodesFitting(tasks[i], nodes)) << "task " << i;
  }
}

// The learner weighs its types by the nodes each fits on in the cluster last
// supplied: 3 pods of one whole GPU and 1 of four. Of two nodes with 4 free GPUs
// and 2 with 1, the 1-GPU type fits 4 and the 4-GPU type 2: with exponent 1 the
// weights ¾ / 4 and ¼ / 2, re-normalised 0.6 and 0.4.
TEST(Fgd, WorkloadLearnerWeighsByTheClusterSupplied) {
  WorkloadLearner learner(/*half_life_pods=*/0, /*max_types=*/8, /*popularity_pct=*/100,
                          /*scarcity_exponent=*/1);
  const PodDemand one = PodBuilder().Milli(1, 1000).Build();
  const PodDemand four = PodBuilder().Milli(4, 1000).Build();
  for (const PodDemand* p : {&one, &one, &one, &four}) learner.Observe(*p);
  auto weight_of = [&](int gpus) {
    for (const FgdTask& t : learner.Current()->tasks)
      if (t.gpus == gpus) return t.weight;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(weight_of(1), 0.75) << "nothing supplied yet: popularity alone";
  const NodeState a = NodeBuilder("a").MilliFree({1000, 1000, 1000, 1000}).Build();
  const NodeState b = NodeBuilder("b").MilliFree({1000, 1000, 1000, 1000}).Build();
  const NodeState c = NodeBuilder("c").MilliFree({1000, 0, 0, 0}).Build();
  const NodeState d = NodeBuilder("d").MilliFree({0, 1000, 300, 0}).Build();
  const std::vector<const NodeState*> cluster = {&a, &b, &c, &d};
  learner.Supply(cluster);
  EXPECT_NEAR(weight_of(1), 0.6, 1e-12);
  EXPECT_NEAR(weight_of(4), 0.4, 1e-12);
  // A type learned after the supply counts as fitting all 4 nodes until the next.
  // Five pods: popularity 3/5, 1/5, 1/5 for 1, 4 and 2 GPUs, over 4, 2 and 4 nodes.
  learner.Observe(PodBuilder().Milli(2, 1000).Build());
  const double total = 0.6 / 4 + 0.2 / 2 + 0.2 / 4;
  EXPECT_NEAR(weight_of(1), 0.6 / 4 / total, 1e-12);
  EXPECT_NEAR(weight_of(4), 0.2 / 2 / total, 1e-12);
  EXPECT_NEAR(weight_of(2), 0.2 / 4 / total, 1e-12);
  // Supplied again, the 2-GPU type is counted: it fits a and b.
  learner.Supply(cluster);
  const double counted = 0.6 / 4 + 0.2 / 2 + 0.2 / 2;
  EXPECT_NEAR(weight_of(2), 0.2 / 2 / counted, 1e-12);
  // Exponent 0: Supply changes nothing.
  WorkloadLearner plain(0, 8, 100, 0);
  for (const PodDemand* p : {&one, &one, &one, &four}) plain.Observe(*p);
  plain.Supply(cluster);
  EXPECT_DOUBLE_EQ(plain.Current()->tasks[0].weight, 0.75);
}

// Best-fit decreasing by hand: 0.81 and 0.16 equally often pair up on a GPU
// (0.97); 0.47s pair (0.94) and the 0.32s go three to a GPU (0.96) or, with 0.65s
// about, beside them (0.97).
TEST(Fgd, PlanFillsByHand) {
  struct Case {
    const char* name;
    std::vector<FgdTask> tasks;
    std::vector<std::pair<int, int>> planned, not_planned;  // (share, used)
    std::string model = "";                                 // the plan for a GPU of this model
  };
  auto share = [](int milli, double weight) { return FgdTask{1000, 1, milli, {}, weight}; };
  auto on = [](const char* model, int milli, double weight) {
    return FgdTask{1000, 1, milli, {model}, weight};
  };
  const Case cases[] = {
      {"0.81 beside 0.16",
       {share(810, 0.5), share(160, 0.5)},
       {{160, 810}, {810, 160}},
       {{160, 160}, {810, 810}}},
      {"pairs of 0.47", {share(470, 1)}, {{470, 470}}, {{470, 940}}},
      {"0.32 beside 0.65, else three of them",
       {share(650, 0.25), share(320, 0.75)},
       {{320, 650}, {650, 320}, {320, 320}, {320, 640}},
       {{650, 650}, {320, 960}}},
      {"whole GPUs and CPU only: no plan", {{0, 2, 1000, {}, 0.5}, {4000, 0, 0, {}, 0.5}}, {}, {}},
      // The 0.6 share comes to T4 GPUs only: beside it the 0.4 share, elsewhere
      // the 0.4 shares pair with each other.
      {"a T4 GPU: 0.4 beside the T4-only 0.6",
       {on("T4", 600, 0.5), share(400, 0.5)},
       {{400, 600}, {600, 400}},
       {{400, 400}},
       "T4"},
      {"another model: no 0.6, 0.4 beside 0.4",
       {on("T4", 600, 0.5), share(400, 0.5)},
       {{400, 400}},
       {{400, 600}, {600, 400}},
       "G2"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const FillPlan all = PlanFills(tc.tasks);
    const FillPlan& plan = all.For(tc.model);
    EXPECT_EQ(plan.empty(), tc.planned.empty());
    for (const auto& [milli, used] : tc.planned)
      EXPECT_TRUE(plan.Planned(milli, used)) << milli << " at " << used;
    for (const auto& [milli, used] : tc.not_planned)
      EXPECT_FALSE(plan.Planned(milli, used)) << milli << " at " << used;
  }
}

// Pods naming many GPU models make at most kMaxPlannedModels plans: those of the
// models named by the most weight; the other models' GPUs follow the plan of the
// types that name none.
TEST(Fgd, PlansAtMostTheHeaviestModels) {
  std::vector<FgdTask> tasks = {{1000, 1, 500, {}, 1.0}};
  const std::size_t named = kMaxPlannedModels + 4;
  for (std::size_t i = 0; i < named; ++i)
    tasks.push_back({1000, 1, 300, {"m" + std::to_string(100 + i)}, 0.01 * (1 + i)});
  std::set<std::string> models;
  for (const ModelTasks& group : TasksByPlannedModel(tasks)) models.insert(group.model);
  ASSERT_EQ(models.size(), 1 + kMaxPlannedModels);  // and "", the types naming none
  EXPECT_FALSE(models.contains("m100"));            // the lightest left out
  EXPECT_TRUE(models.contains("m" + std::to_string(100 + named - 1)));
  const FillPlan plan = PlanFills(tasks);
  EXPECT_EQ(plan.models(), kMaxPlannedModels);
  EXPECT_FALSE(plan.For("m100").Planned(300, 500));  // the plan of the types naming none
  EXPECT_TRUE(plan.For("m100").Planned(500, 500));
  EXPECT_TRUE(plan.For("m119").Planned(300, 500));
}

// Where the workload's task types name GPU models, each model's GPUs follow the
// plan of the types they take: a 0.4 share goes beside the T4-only 0.6 on a T4
// node and beside another 0.4 on a G2 node.
TEST(Fgd, AFillPlanPerGpuModel) {
  ConfigErrors errors;
  const Fgd fgd(FgdArgs::Parse(
      YAML::Load("{tasks: [{gpus: 1, gpuMilli: 600, models: [T4], weight: 0.5}, {gpus: 1, "
                 "gpuMilli: 400, weight: 0.5}], fillPlan: workload}"),
      "a", errors));
  ASSERT_TRUE(errors.empty());
  const PodDemand pod = PodBuilder().Milli(1, 400).Requests(1000, kGi).Build();
  const CycleState cycle = Cycle(DefaultPolicyConfig(), pod);
  struct Case {
    const char* name;
    const char* model;
    int want_gpu;
  };
  const Case cases[] = {
      {"T4: beside the 0.6", "T4", 0},
      {"G2: beside the 0.4", "G2", 1},
  };
  // The same plan configured: the model's entries for its GPUs.
  const Fgd configured(FgdArgs::Parse(
      YAML::Load("{tasks: [{gpus: 1, gpuMilli: 400, weight: 1}], fillPlan: [{share: 400, used: "
                 "[400]}, {share: 400, used: [600], model: T4}]}"),
      "a", errors));
  ASSERT_TRUE(errors.empty());
  for (const Fgd* plugin : {&fgd, &configured})
    for (const Case& tc : cases) {
      SCOPED_TRACE(tc.name);
      // GPU 0 has 0.6 taken, GPU 1 0.4.
      const NodeState node =
          NodeBuilder("n").MilliFree({400, 600}, tc.model).Resources(64000, 64 * kGi).Build();
      NodeScratch s;
      ASSERT_TRUE(plugin->FilterOne(cycle, node, s).ok());
      EXPECT_EQ(s.gpus.Indices(), std::vector<int>{tc.want_gpu});
    }
}

// With `fillPlan: workload` the plugin plans for its configured tasks, and with
// `tasks: learned` for the learned workload once the learner has planned it.
TEST(Fgd, AFillPlanOfTheWorkload) {
  const NodeState node =
      NodeBuilder("n").MilliFree({530, 190, 1000}).Resources(64000, 64 * kGi).Build();
  const PodDemand small = PodBuilder().Milli(1, 160).Requests(1000, kGi).Build();
  const PodDemand large = PodBuilder().Milli(1, 810).Requests(1000, kGi).Build();
  auto chosen = [&](const Fgd& fgd, const CycleState& cycle) {
    NodeScratch s;
    EXPECT_TRUE(fgd.FilterOne(cycle, node, s).ok());
    return s.gpus.Indices();
  };
  ConfigErrors errors;
  const Fgd configured(FgdArgs::Parse(
      YAML::Load("{tasks: [{gpus: 1, gpuMilli: 810, weight: 0.5}, {gpus: 1, gpuMilli: 160, "
                 "weight: 0.5}], fillPlan: workload}"),
      "a", errors));
  ASSERT_TRUE(errors.empty());
  EXPECT_EQ(chosen(configured, Cycle(DefaultPolicyConfig(), small)), std::vector<int>{1});

  const Fgd learning(
      FgdArgs::Parse(YAML::Load("{tasks: learned, fillPlan: workload}"), "a", errors));
  ASSERT_TRUE(errors.empty());
  WorkloadLearner learner(0, 8, 100, 0);
  for (const PodDemand* p : {&small, &large}) learner.Observe(*p);
  CycleState cycle = Cycle(DefaultPolicyConfig(), small);
  cycle.workload = learner.Current();
  EXPECT_EQ(cycle.workload->fill_plan, nullptr) << "nothing planned before a supply";
  const std::vector<int> unplanned = chosen(learning, cycle);
  const std::vector<const NodeState*> cluster = {&node};
  learner.Supply(cluster);
  cycle.workload = learner.Current();
  ASSERT_NE(cycle.workload->fill_plan, nullptr);
  EXPECT_TRUE(cycle.workload->fill_plan->Planned(160, 810));
  EXPECT_EQ(chosen(learning, cycle), std::vector<int>{1});
  EXPECT_NE(unplanned, std::vector<int>{1});
}

TEST(Fgd, Args) {
  struct Case {
    const char* name;
    const char* yaml;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"good", "{tasks: [{cpuMilli: 1000, gpus: 1, gpuMilli: 500, models: [T4], weight: 1}]}", {}},
      {"default: whole GPUs", "{}", {}},
      {"pack tie-break", "{tieBreak: pack}", {}},
      {"coarser scores", "{scoreStep: 2}", {}},
      {"score step 0", "{scoreStep: 0}", {"a.scoreStep: must be in 1..50"}},
      {"score step 51", "{scoreStep: 51}", {"a.scoreStep: must be in 1..50"}},
      {"whole-GPU step", "{wholeGpuScoreStep: 3}", {}},
      {"whole-GPU step -1",
       "{wholeGpuScoreStep: -1}",
       {"a.wholeGpuScoreStep: must be in 0..50 (0: scoreStep)"}},
      {"whole-GPU step 51",
       "{wholeGpuScoreStep: 51, tasks: [{gpus: 1, gpuMilli: 1000, weight: 1}]}",
       {"a.wholeGpuScoreStep: must be in 0..50 (0: scoreStep)"}},
      {"no tie-break", "{tieBreak: none, tasks: [{gpus: 1, gpuMilli: 1000, weight: 1}]}", {}},
      {"unknown tie-break",
       "{tieBreak: fullest}",
       {"a.tieBreak: \"fullest\" (expected none or pack)"}},
      {"empty list", "{tasks: []}", {"a.tasks: empty (expected the target workload's task types)"}},
      {"learned", "{tasks: learned, wholeGpuScoreStep: 3}", {}},
      {"only with Tidal's device plugin", "{tasks: learned, onlyWithTidalDevicePlugin: true}", {}},
      {"only with Tidal's device plugin: not a bool",
       "{onlyWithTidalDevicePlugin: yes please}",
       {"a.onlyWithTidalDevicePlugin: expected true or false"}},
      {"another word",
       "{tasks: learn}",
       {"a.tasks: expected learned or a list of {cpuMilli, gpus, gpuMilli, models, weight}",
        "a.tasks: empty (expected the target workload's task types)"}},
      {"not a list",
       "{tasks: 3}",
       {"a.tasks: expected learned or a list of {cpuMilli, gpus, gpuMilli, models, weight}",
        "a.tasks: empty (expected the target workload's task types)"}},
      {"bad task",
       "{tasks: [{cpuMilli: 1, gpus: 2, gpuMilli: 500, weight: 0.5}]}",
       {"a.tasks[0].gpuMilli: must be 1000 for more than one GPU",
        "a.tasks: weights sum to 0.5 (expected 1)"}},
      {"fill plan", "{fillPlan: [{share: 810, used: [160, 110]}, {share: 160, used: [810]}]}", {}},
      {"fill plan: not a list",
       "{fillPlan: {share: 810}}",
       {"a.fillPlan: expected workload or a list of {share, used: [..], model}"}},
      {"fill plan: a whole GPU",
       "{fillPlan: [{share: 1000, used: []}]}",
       {"a.fillPlan[0].share: must be in 1..999 (milli-GPU shared)"}},
      {"fill plan: twice",
       "{fillPlan: [{share: 500, used: [500]}, {share: 500, used: [100]}]}",
       {"a.fillPlan[1].share: 500 listed twice"}},
      {"a share once per model",
       "{fillPlan: [{share: 500, used: [500]}, {share: 500, used: [100], model: T4}]}",
       {}},
      {"a share twice for one model",
       "{fillPlan: [{share: 500, used: [500], model: T4}, {share: 500, used: [100], model: T4}]}",
       {"a.fillPlan[1].share: 500 listed twice for model T4"}},
      {"fill plan: over the GPU",
       "{fillPlan: [{share: 810, used: [160, 200, 0]}]}",
       {"a.fillPlan[0].used[1]: 200 (expected 1..190: the GPU's milli taken)",
        "a.fillPlan[0].used[2]: 0 (expected 1..190: the GPU's milli taken)"}},
      {"fill plan: no levels",
       "{fillPlan: [{share: 810}]}",
       {"a.fillPlan[0].used: expected a list of milli-GPU fill levels"}},
      {"fill plan: a word",
       "{fillPlan: [{share: 810, used: [some]}]}",
       {"a.fillPlan[0].used[0]: expected an integer"}},
      {"fill plan of the workload", "{tasks: learned, fillPlan: workload}", {}},
      {"fill plan: unknown key",
       "{fillPlan: [{share: 810, used: [], with: 1}]}",
       {"a.fillPlan[0].with: unknown field (expected one of: share, used, model)"}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    const auto p = NewFgd(YAML::Load(tc.yaml), "a", errors);
    EXPECT_EQ(p != nullptr, tc.want.empty());
    EXPECT_EQ(errors.items(), tc.want);
  }
}

}  // namespace
}  // namespace tidal
