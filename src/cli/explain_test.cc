// tidal explain, run as a user would, on the worked examples of docs/design.md.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "testing/run_command.h"

namespace tidal {
namespace {

using namespace tidal::testing;
using nlohmann::json;

constexpr int kNoNodeFits = 3;

std::string ExplainJsonArgs(const std::string& pod, const std::string& config = "") {
  std::string args = "explain --output json --pod " + Source("examples/explain/" + pod) +
                     " --nodes " + Source("examples/explain/nodes.yaml");
  if (!config.empty()) args += " --config " + Source("examples/config/" + config);
  return args;
}

json Explain(const std::string& pod, const std::string& config = "", int want_exit = 0) {
  const CommandResult r = RunTidal(ExplainJsonArgs(pod, config));
  EXPECT_EQ(r.exit_code, want_exit) << r.out;
  return json::parse(r.out);
}

const json& Node(const json& j, const std::string& name) {
  for (const auto& n : j["nodes"])
    if (n["name"] == name) return n;
  static const json none;
  ADD_FAILURE() << "no node " << name;
  return none;
}

TEST(Explain, WorkedCase78PercentScores73_3WithNoMargin) {
  const json j = Explain("pod-small.yaml", "no-margin.yaml");
  const json& n = Node(j, "node-78");
  EXPECT_TRUE(n["feasible"].get<bool>());
  EXPECT_DOUBLE_EQ(n["scores"]["loadaware"].get<double>(), 73.33);
}

TEST(Explain, WorkedCase88PercentIsRejected) {
  const json j = Explain("pod-small.yaml");
  const json& n = Node(j, "node-88");
  EXPECT_FALSE(n["feasible"].get<bool>());
  ASSERT_GE(n["reasons"].size(), 1u);
  EXPECT_EQ(n["reasons"][0], "loadaware: GPU memory 88% over reject threshold 82%");
  EXPECT_EQ(n["score"].get<double>(), 0);
}

TEST(Explain, WorkedCaseNvlinkIndexAndIoLoad) {
  const json j = Explain("pod-small.yaml");
  EXPECT_DOUBLE_EQ(Node(j, "node-nvlink")["load"]["nvlink"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(Node(j, "node-io")["load"]["ioLoad"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(Node(j, "node-io")["load"]["storageAwaitMs"].get<double>(), 42.83);
}

TEST(Explain, OomCaseLandsOnTheGpuWithRealFreeMemory) {
  const json j = Explain("pod-resnet.yaml");
  const json& n = Node(j, "node-oom");
  EXPECT_TRUE(n["feasible"].get<bool>());
  EXPECT_EQ(n["gpus"], json::array({1}));
  // 20 GiB does not fit next to 78 % of 24 GiB: the A10 nodes reject with numbers.
  const json& warm = Node(j, "node-78");
  EXPECT_FALSE(warm["feasible"].get<bool>());
  EXPECT_NE(warm["reasons"].dump().find("largest free"), std::string::npos);
}

TEST(Explain, RequiredNvlinkPodGoesToTheNvlinkNode) {
  const json j = Explain("pod-gpt2-ddp.json");
  EXPECT_EQ(j["pod"], "ml/gpt2-ddp");
  EXPECT_EQ(j["best"], "node-nvlink");
  EXPECT_EQ(Node(j, "node-nvlink")["gpus"].size(), 2u);
  EXPECT_NE(Node(j, "node-io")["reasons"].dump().find("requires NVLink"), std::string::npos);
}

TEST(Explain, BestNodeComesFirstAndScoresHaveTwoDecimals) {
  const json j = Explain("pod-small.yaml");
  ASSERT_FALSE(j["best"].is_null());
  EXPECT_EQ(j["nodes"][0]["name"], j["best"]);
  double last = 101;
  for (const auto& n : j["nodes"]) {
    if (!n["feasible"].get<bool>()) continue;
    const double s = n["score"].get<double>();
    EXPECT_LE(s, last);
    EXPECT_DOUBLE_EQ(s, std::round(s * 100) / 100);
    last = s;
  }
}

// A score plugin left out of the pod's weighted mean is named as skipped, not
// shown with a score: the default profile's fgd until a pod is seen given the
// GPUs Tidal named (never, for explain). The final score is the others' mean.
TEST(Explain, SkippedScoresAreNamedAndLeftOut) {
  const json j = Explain("pod-small.yaml");
  EXPECT_EQ(j["skippedScores"], json::array({"fgd"}));
  for (const auto& n : j["nodes"]) {
    if (!n["feasible"].get<bool>()) continue;
    EXPECT_FALSE(n["scores"].contains("fgd")) << n.dump();
    const json& sc = n["scores"];
    const double mean =
        (sc["loadaware"].get<double>() + sc["gpufit"].get<double>() + sc["balance"].get<double>()) /
        3;
    EXPECT_NEAR(n["score"].get<double>(), mean, 0.01) << n.dump();
  }
  const CommandResult r = RunTidal("explain --pod " + Source("examples/explain/pod-small.yaml") +
                                   " --nodes " + Source("examples/explain/nodes.yaml"));
  EXPECT_NE(r.out.find(" skip "), std::string::npos) << r.out;
}

TEST(Explain, MalformedAnnotationIsUnresolvableEverywhere) {
  const json j = Explain("pod-bad-threshold.yaml", "", kNoNodeFits);
  EXPECT_TRUE(j["best"].is_null());
  for (const auto& n : j["nodes"]) {
    EXPECT_EQ(n["verdict"], "unresolvable");
    EXPECT_NE(n["reasons"].dump().find("ai.gpu-reject-threshold"), std::string::npos);
  }
}

TEST(Explain, TableNamesEveryNodeAndTheBest) {
  const CommandResult r = RunTidal("explain --pod " + Source("examples/explain/pod-small.yaml") +
                                   " --nodes " + Source("examples/explain/nodes.yaml"));
  ASSERT_EQ(r.exit_code, 0);
  for (const char* name : {"node-78", "node-88", "node-nvlink", "node-io", "node-oom", "best: "})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  EXPECT_NE(r.out.find("GPU memory 88% over reject threshold 82%"), std::string::npos);
}

// Scripts tell "no node fits" from a fit and from bad input by the exit code
// alone, with either output.
TEST(Explain, ExitCodeSaysWhetherANodeFits) {
  struct Case {
    const char* name;
    const char* pod;
    int want;
  };
  const Case cases[] = {
      {"a node fits", "pod-small.yaml", 0},
      {"an unresolvable pod fits nowhere", "pod-bad-threshold.yaml", kNoNodeFits},
  };
  for (const auto& tc : cases) {
    for (const char* output : {"table", "json"}) {
      SCOPED_TRACE(std::string(tc.name) + ", " + output);
      const CommandResult r = RunTidal("explain --output " + std::string(output) + " --pod " +
                                       Source(std::string("examples/explain/") + tc.pod) +
                                       " --nodes " + Source("examples/explain/nodes.yaml"));
      EXPECT_EQ(r.exit_code, tc.want) << r.out;
      EXPECT_FALSE(r.out.empty());  // the explanation is printed either way
    }
  }
}

// Loads and scores are short decimals: 0.1901, not 0.19010000000000002.
TEST(Explain, JsonNumbersAreShortDecimals) {
  const CommandResult r = RunTidal(ExplainJsonArgs("pod-resnet.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::smatch long_number;
  EXPECT_FALSE(std::regex_search(r.out, long_number, std::regex("[0-9]\\.[0-9]{5,}")))
      << long_number.str();
  const json j = json::parse(r.out);
  struct Case {
    const char* node;
    double gpu_memory;
  };
  for (const Case& tc : {Case{"node-io", 0.1901}, Case{"node-oom", 0.6042}}) {
    SCOPED_TRACE(tc.node);
    EXPECT_EQ(Node(j, tc.node)["load"]["gpuMemory"].get<double>(), tc.gpu_memory);
  }
}

TEST(Explain, BadInputGivesAClearErrorAndExitCode2) {
  struct Case {
    const char* name;
    std::string args;
    const char* want;
  };
  const Case cases[] = {
      {"missing pod file",
       "explain --pod /nonexistent.yaml --nodes " + Source("examples/explain/nodes.yaml"),
       "cannot open"},
      {"bad output",
       "explain --output xml --pod " + Source("examples/explain/pod-small.yaml") + " --nodes " +
           Source("examples/explain/nodes.yaml"),
       "expected table or json"},
      {"a config is not a node snapshot",
       "explain --pod " + Source("examples/explain/pod-small.yaml") + " --nodes " +
           Source("examples/config/tidal.yaml"),
       "expected a mapping with a list under \"nodes\""},
      {"an unknown flag (CLI11's own code is 109)",
       "explain --bogus --pod " + Source("examples/explain/pod-small.yaml") + " --nodes " +
           Source("examples/explain/nodes.yaml"),
       "The following argument was not expected: --bogus"},
      {"a missing required flag (CLI11's own code is 106)",
       "explain --nodes " + Source("examples/explain/nodes.yaml"), "--pod is required"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunTidal(tc.args, true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(tc.want), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal
