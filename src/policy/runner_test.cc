#include "tidal/policy/runner.h"

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/kubetypes/pod_yaml.h"
#include "tidal/policy/registry.h"

namespace tidal {
namespace {

using namespace tidal::testing;

std::vector<NodeState> Cluster() {
  return {
      NodeBuilder("full").Gpus(4, 24 * kGi).MemoryFraction(0.88).Build(),
      NodeBuilder("warm").Gpus(4, 24 * kGi).MemoryFraction(0.76).Build(),
      NodeBuilder("idle").Gpus(4, 24 * kGi).MemoryFraction(0.10).Build(),
      NodeBuilder("slow-disk").Gpus(4, 24 * kGi).MemoryFraction(0.10).Await(90).Build(),
      NodeBuilder("small").Gpus(1, 24 * kGi).Build(),
  };
}

TEST(Runner, VerdictsReasonsScoresAndGpus) {
  Runner runner(DefaultPolicyConfig());
  const std::vector<NodeState> nodes = Cluster();
  const PodDemand pod = PodBuilder().Gpus(2).Memory(4 * kGi).Build();
  RunOptions opts;
  opts.all_reasons = true;
  const Evaluation ev = runner.Evaluate(pod, nodes, opts);
  ASSERT_TRUE(ev.pod_status.ok());
  ASSERT_EQ(ev.nodes.size(), 5u);
  EXPECT_EQ(ev.score_names, (std::vector<std::string>{"loadaware", "gpufit", "balance", "fgd"}));

  EXPECT_FALSE(ev.nodes[0].feasible());
  EXPECT_EQ(ev.nodes[0].status.reason(), "loadaware: GPU memory 88% over reject threshold 82%");
  // All reasons: the full node is also out of GPU memory for 8 GiB per GPU.
  ASSERT_EQ(ev.Reasons(0).size(), 2u);
  EXPECT_NE(ev.Reasons(0)[1].reason().find("gpufit:"), std::string::npos);

  EXPECT_TRUE(ev.nodes[1].feasible());
  EXPECT_NEAR(ev.PluginScore(1, 0), 75, 1e-6);
  EXPECT_TRUE(ev.nodes[2].feasible());
  EXPECT_EQ(ev.nodes[2].gpus.Indices(), (std::vector<int>{0, 1}));
  EXPECT_FALSE(ev.nodes[3].feasible());
  EXPECT_EQ(ev.nodes[3].status.reason(),
            "loadaware: storage await 90.0 ms over reject threshold 67.9 ms");
  EXPECT_EQ(ev.nodes[4].status.code(), Code::kUnresolvable);
  EXPECT_EQ(ev.best, 2);
  EXPECT_EQ(ev.FeasibleCount(), 2);
  for (const auto& r : ev.nodes) {
    if (r.feasible()) {
      EXPECT_TRUE(r.score >= 0 && r.score <= 100);
    }
  }
}

TEST(Runner, FirstFailureOnlyByDefault) {
  Runner runner(DefaultPolicyConfig());
  const std::vector<NodeState> nodes = Cluster();
  const Evaluation ev = runner.Evaluate(PodBuilder().Gpus(2).Memory(4 * kGi).Build(), nodes);
  EXPECT_TRUE(ev.Reasons(0).empty());
  EXPECT_EQ(ev.nodes[0].status.reason(), "loadaware: GPU memory 88% over reject threshold 82%");
  EXPECT_EQ(ev.timings.size(), 4u);
}

TEST(Runner, MalformedPodIsUnresolvableOnEveryNode) {
  Runner runner(DefaultPolicyConfig());
  const std::vector<NodeState> nodes = Cluster();
  const Evaluation ev = runner.Evaluate(
      PodBuilder().Gpus(1).Invalid("annotation ai.gpu-memory: \"lots\"").Build(), nodes);
  EXPECT_EQ(ev.pod_status.code(), Code::kUnresolvable);
  EXPECT_EQ(ev.best, -1);
  for (const auto& r : ev.nodes) EXPECT_EQ(r.status.code(), Code::kUnresolvable);
}

TEST(Runner, FinalScoreIsTheWeightedMean) {
  PolicyConfig c = DefaultPolicyConfig();
  c.plugins = {{"loadaware", true, 3, ""}, {"balance", true, 1, ""}};
  Runner runner(c);
  const std::vector<NodeState> nodes = {
      NodeBuilder("warm").Gpus(4, 24 * kGi).MemoryFraction(0.76).Build()};
  const Evaluation ev = runner.Evaluate(PodBuilder().Gpus(1).Memory(0).Build(), nodes);
  ASSERT_TRUE(ev.nodes[0].feasible());
  const double want = (3 * ev.PluginScore(0, 0) + ev.PluginScore(0, 1)) / 4;
  EXPECT_NEAR(ev.nodes[0].score, want, 1e-9);
}

TEST(Runner, DisabledPluginsDoNotRun) {
  PolicyConfig c = DefaultPolicyConfig();
  c.plugins[0].enabled = false;  // loadaware off: the full node is no longer rejected on load
  Runner runner(c);
  const std::vector<NodeState> nodes = {
      NodeBuilder("full").Gpus(4, 24 * kGi).MemoryFraction(0.88).Build()};
  const Evaluation ev = runner.Evaluate(PodBuilder().Gpus(1).Memory(1 * kGi).Build(), nodes);
  EXPECT_TRUE(ev.nodes[0].feasible());
  EXPECT_EQ(ev.score_names, (std::vector<std::string>{"gpufit", "balance", "fgd"}));
}

// A plugin that returns an out-of-range score is caught by the runner.
class BadScore final : public ScoreEachNode<BadScore> {
 public:
  std::string_view Name() const override { return "bad"; }
  double ScoreOne(const CycleState&, const NodeState&, const NodeScratch&) const { return 120; }
};

TEST(Runner, ChecksScoreRange) {
  std::vector<Runner::WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<BadScore>(), 1});
  Runner runner(DefaultPolicyConfig(), std::move(plugins));
  const std::vector<NodeState> nodes = {NodeBuilder("n").Gpus(1, 24 * kGi).Build()};
  const Evaluation ev = runner.Evaluate(PodBuilder().Gpus(1).Build(), nodes);
  EXPECT_EQ(ev.nodes[0].status.code(), Code::kError);
  EXPECT_EQ(ev.nodes[0].status.reason(), "bad: score 120 outside [0, 100]");
  EXPECT_EQ(ev.best, -1);
}

// Filters in both styles: one tags its rejections itself (the adapter), the other
// writes untagged statuses over the whole batch and leaves tagging to the runner.
class RejectEveryThird final : public FilterEachNode<RejectEveryThird> {
 public:
  std::string_view Name() const override { return "third"; }
  Status FilterOne(const CycleState&, const NodeState& node, NodeScratch&) const {
    return node.allocatable_gpus % 3 == 0 ? Status::Unfit("divisible by 3") : Status::Fits();
  }
};
class RejectEveryFifth final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "fifth"; }
  void FilterBatch(const CycleState&, std::span<const NodeState* const> nodes,
                   std::span<NodeScratch>, StatusColumn status, bool all) const override {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if ((all || status[i].ok()) && nodes[i]->allocatable_gpus % 5 == 0)
        status[i] = Status::Unfit("divisible by 5");
  }
};
// Scores 100 minus the node's number, but 150 (out of range) for numbers ending in 7.
class ScoreByNumber final : public ScoreEachNode<ScoreByNumber> {
 public:
  std::string_view Name() const override { return "number"; }
  double ScoreOne(const CycleState&, const NodeState& node, const NodeScratch&) const {
    return node.allocatable_gpus % 10 == 7 ? 150 : 100.0 - node.allocatable_gpus % 100;
  }
};
class ScoreFifty final : public ScoreEachNode<ScoreFifty> {
 public:
  std::string_view Name() const override { return "fifty"; }
  double ScoreOne(const CycleState&, const NodeState&, const NodeScratch&) const { return 50; }
};

// Scores 50 everywhere and has nothing to say about pods of more than one GPU.
class SkipsMultiGpuPods final : public ScoreEachNode<SkipsMultiGpuPods> {
 public:
  std::string_view Name() const override { return "skips"; }
  double ScoreOne(const CycleState&, const NodeState&, const NodeScratch&) const { return 50; }
  bool SkipsScore(const CycleState& cycle) const override { return cycle.pod->gpu_count > 1; }
};

// A plugin that skips a pod is left out of that pod's weighted mean (its score
// is still reported); for the other pods it counts like any other. The same
// runner, evaluation and scratch serve both, so nothing of one call leaks.
TEST(Runner, APluginThatSkipsThePodIsLeftOutOfItsMean) {
  struct Case {
    const char* name;
    int gpus;
    double want;  // node "n" of 4 GPUs: number scores 100 − 4 = 96
  };
  const Case cases[] = {
      {"one GPU: (96·3 + 50) / 4", 1, (96.0 * 3 + 50) / 4},
      {"two GPUs: skipped, 96", 2, 96},
      {"one GPU again", 1, (96.0 * 3 + 50) / 4},
  };
  std::vector<Runner::WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<ScoreByNumber>(), 3});
  plugins.push_back({std::make_unique<SkipsMultiGpuPods>(), 1});
  const Runner runner(DefaultPolicyConfig(), std::move(plugins));
  std::vector<NodeState> nodes = {NodeBuilder("n").Gpus(4, 24 * kGi).Build()};
  nodes[0].allocatable_gpus = 4;  // ScoreByNumber's number
  const NodeState* views[] = {&nodes[0]};
  Evaluation ev;
  EvaluationScratch scratch;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const PodDemand pod = PodBuilder().Gpus(tc.gpus).Build();
    runner.Evaluate(pod, views, RunOptions{}, &ev, &scratch);
    ASSERT_TRUE(ev.nodes[0].feasible());
    EXPECT_DOUBLE_EQ(ev.nodes[0].score, tc.want);
    EXPECT_DOUBLE_EQ(ev.PluginScore(0, 1), 50);
  }
}

// Across several blocks (Runner::kBlock) and with one Evaluation reused: each node's
// verdict names the filter that rejected it, out-of-range scores are errors, and
// nothing of one call leaks into the next.
TEST(Runner, MixedFiltersAcrossBlocksAndReusedEvaluations) {
  std::vector<Runner::WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<RejectEveryThird>(), 1});
  plugins.push_back({std::make_unique<RejectEveryFifth>(), 1});
  plugins.push_back({std::make_unique<ScoreFifty>(), 1});
  plugins.push_back({std::make_unique<ScoreByNumber>(), 3});
  Runner runner(DefaultPolicyConfig(), std::move(plugins));
  const std::size_t count = 2 * Runner::kBlock + 37;
  std::vector<NodeState> nodes;
  for (std::size_t i = 0; i < count; ++i) {
    nodes.push_back(NodeBuilder("n" + std::to_string(i)).Gpus(1, 24 * kGi).Build());
    nodes.back().allocatable_gpus = static_cast<int>(i) + 1;  // the node's number
  }
  std::vector<const NodeState*> ptrs;
  for (const auto& n : nodes) ptrs.push_back(&n);
  const PodDemand pod = PodBuilder().Gpus(1).Build();
  Evaluation ev;
  for (const bool all_reasons : {false, true, false}) {
    SCOPED_TRACE(all_reasons ? "all reasons" : "first failure");
    RunOptions options;
    options.all_reasons = all_reasons;
    runner.Evaluate(pod, ptrs, options, &ev);
    ASSERT_EQ(ev.nodes.size(), count);
    int best = -1;
    double best_score = -1;
    for (std::size_t i = 0; i < count; ++i) {
      SCOPED_TRACE(i);
      const int number = static_cast<int>(i) + 1;
      const NodeResult& r = ev.nodes[i];
      EXPECT_EQ(r.node, &nodes[i]);
      std::vector<std::string> want_reasons;
      if (number % 3 == 0) want_reasons.push_back("third: divisible by 3");
      if (number % 5 == 0) want_reasons.push_back("fifth: divisible by 5");
      if (!want_reasons.empty()) {
        EXPECT_EQ(r.status.code(), Code::kUnfit);
        EXPECT_EQ(r.status.reason(), want_reasons[0]);
        EXPECT_EQ(ev.PluginScore(i, 0), 0);
        EXPECT_EQ(ev.PluginScore(i, 1), 0);
      } else if (number % 10 == 7) {
        EXPECT_EQ(r.status.code(), Code::kError);
        EXPECT_EQ(r.status.reason(), "number: score 150 outside [0, 100]");
        EXPECT_EQ(ev.PluginScore(i, 0), 50);  // before the bad one: kept
        EXPECT_EQ(ev.PluginScore(i, 1), 0);
        want_reasons.push_back(r.status.reason());
      } else {
        ASSERT_TRUE(r.feasible()) << r.status.reason();
        const double want = (50 + 3 * (100.0 - number % 100)) / 4;
        EXPECT_DOUBLE_EQ(r.score, want);
        if (r.score > best_score) {
          best_score = r.score;
          best = static_cast<int>(i);
        }
      }
      if (all_reasons) {
        std::vector<std::string> got;
        for (const Status& s : ev.Reasons(i)) got.push_back(s.reason());
        EXPECT_EQ(got, want_reasons);
      } else {
        EXPECT_TRUE(ev.Reasons(i).empty());
      }
    }
    EXPECT_EQ(ev.best, best);
  }
  // A malformed pod then a good one, in the same Evaluation.
  PodDemand bad = pod;
  bad.invalid_reason = "annotation ai.gpu-reject-threshold: \"NaN\" is not a number";
  runner.Evaluate(bad, ptrs, {}, &ev);
  EXPECT_EQ(ev.nodes[0].status.code(), Code::kUnresolvable);
  runner.Evaluate(pod, ptrs, {}, &ev);
  EXPECT_TRUE(ev.nodes[0].feasible()) << ev.nodes[0].status.reason();
  EXPECT_EQ(ev.nodes[2].status.reason(), "third: divisible by 3");
}

TEST(Registry, EveryPluginBuildsWithDefaultArgs) {
  for (const auto& e : Registry()) {
    SCOPED_TRACE(e.name);
    ConfigErrors errors;
    EXPECT_NE(e.make(YAML::Node(), "plugins." + e.name + ".args", errors), nullptr);
    EXPECT_TRUE(errors.empty()) << errors.Joined();
  }
}

TEST(Runner, BadPluginArgsThrowAtConstruction) {
  PolicyConfig c = DefaultPolicyConfig();
  c.plugins[2].args = "{mode: fill}";
  EXPECT_THROW(Runner{c}, InputError);
}

// A pod's ai.gpu-reject-threshold, decoded from the Pod object like the extender
// does, may move its threshold only inside its namespace's range: asking for more
// than the maximum is refused (clamped), so a node over the maximum stays rejected.
TEST(Runner, APodAnnotationCannotRaiseItsThresholdAboveTheNamespaceMaximum) {
  const PolicyConfig config = LoadPolicyConfig(YAML::Load(R"(
tenants:
  research: {podThresholdRange: {min: 0.50, max: 0.90}}
  trusted:
    thresholds: {gpuMemory: {warn: 0.70, reject: 0.95}}
    podThresholdRange: {min: 0.50, max: 0.95}
)"));
  Runner runner(config);
  const std::vector<NodeState> nodes = {
      NodeBuilder("at-89").Gpus(4, 24 * kGi).MemoryFraction(0.89).Build()};
  struct Case {
    const char* name;
    const char* ns;
    const char* threshold;  // the annotation's text
    bool feasible;
    const char* reason;
  };
  const Case cases[] = {
      {"far above the namespace maximum", "research", "0.99", false,
       "loadaware: GPU memory 89% over reject threshold 87%"},
      {"just above the namespace maximum", "research", "0.91", false,
       "loadaware: GPU memory 89% over reject threshold 87%"},
      {"the maximum itself", "research", "0.90", false,
       "loadaware: GPU memory 89% over reject threshold 87%"},
      {"without a tenant the cluster's threshold is the maximum", "default", "1", false,
       "loadaware: GPU memory 89% over reject threshold 82%"},
      {"a namespace that allows more lets the same pod in", "trusted", "0.95", true, ""},
      {"malformed values are refused outright", "trusted", "0.95 ", false,
       "ai.gpu-reject-threshold"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::string yaml =
        std::string("metadata:\n  name: p\n  namespace: ") + tc.ns +
        "\n  annotations:\n    ai.gpu-memory: 1Gi\n    ai.gpu-reject-threshold: \"" + tc.threshold +
        "\"\nspec:\n  containers:\n  - name: c\n    resources:\n      "
        "limits: {nvidia.com/gpu: 1}\n";
    RawPod raw;
    ASSERT_TRUE(DecodePodYaml(yaml, &raw).ok()) << yaml;
    const Evaluation ev = runner.Evaluate(ToPodDemand(raw), nodes);
    ASSERT_EQ(ev.nodes.size(), 1u);
    EXPECT_EQ(ev.nodes[0].feasible(), tc.feasible) << ev.nodes[0].status.reason();
    if (!tc.feasible) {
      const std::string& why =
          ev.pod_status.ok() ? ev.nodes[0].status.reason() : ev.pod_status.reason();
      EXPECT_NE(why.find(tc.reason), std::string::npos) << why;
    }
  }
}

}  // namespace
}  // namespace tidal
