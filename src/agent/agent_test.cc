// The agent core (passes, up/duration series, snapshots, thread), the HTTP
// exposition in-process, and the competition index.
#include "tidal/agent/agent.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "agent/agent_test_util.h"
#include "agent/exposition_check.h"
#include "tidal/agent/http.h"
#include "tidal/agent/pods.h"

namespace tidal::agent {
namespace {

using testing::Find;

// A collector whose outcome and cost the test scripts.
class FakeCollector final : public Collector {
 public:
  FakeCollector(std::string name, ManualMonotonicClock* clock)
      : name_(std::move(name)), clock_(clock) {}
  std::string_view Name() const override { return name_; }
  Status Collect(MetricSet& out) override {
    ++calls;
    out.Declare("fake_value", "A value from a fake collector.");
    out.Add("fake_value", {{"from", name_}}, calls);
    if (clock_) clock_->AdvanceMs(cost_ms);
    return fail.empty() ? Status() : Status::Error(fail);
  }
  std::atomic<int> calls{0};
  std::string fail;
  int cost_ms = 0;

 private:
  std::string name_;
  ManualMonotonicClock* clock_;
};

struct Built {
  std::unique_ptr<Agent> agent;
  FakeCollector* a;
  FakeCollector* b;
};

Built Build(ManualMonotonicClock* clock, std::int64_t interval_ms = 10'000) {
  auto a = std::make_unique<FakeCollector>("alpha", clock);
  auto b = std::make_unique<FakeCollector>("beta", clock);
  Built r{nullptr, a.get(), b.get()};
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::move(a));
  cs.push_back(std::move(b));
  r.agent = std::make_unique<Agent>(AgentOptions{"node-1", interval_ms}, std::move(cs), *clock);
  return r;
}

TEST(Agent, NothingIsServedBeforeTheFirstPass) {
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  EXPECT_EQ(b.agent->Latest(), nullptr);
  EXPECT_FALSE(b.agent->Healthy());
}

TEST(Agent, APassExposesEveryCollectorsUpAndDuration) {
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  b.a->cost_ms = 250;
  b.b->fail = "beta: sensor \"x\" lost";
  b.agent->CollectOnce();
  const auto e = b.agent->Latest();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->pass, 1u);
  EXPECT_FALSE(e->all_up);
  EXPECT_EQ(testing::CheckExposition(e->text), "") << e->text;
  EXPECT_NE(e->text.find("ai_collector_up{node=\"node-1\",collector=\"alpha\",reason=\"\"} 1\n"),
            std::string::npos)
      << e->text;
  EXPECT_NE(e->text.find("ai_collector_up{node=\"node-1\",collector=\"beta\",reason=\"beta: sensor "
                         "\\\"x\\\" lost\"} 0\n"),
            std::string::npos)
      << e->text;
  EXPECT_NE(
      e->text.find("ai_collector_duration_seconds{node=\"node-1\",collector=\"alpha\"} 0.25\n"),
      std::string::npos)
      << e->text;
  // The down collector's samples are still served.
  EXPECT_NE(e->text.find("fake_value{node=\"node-1\",from=\"beta\"} 1\n"), std::string::npos);
}

TEST(Agent, SnapshotsAreImmutableAcrossPasses) {
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  b.agent->CollectOnce();
  const auto first = b.agent->Latest();
  const std::string text = first->text;
  b.agent->CollectOnce();
  EXPECT_EQ(first->text, text) << "a reader's snapshot must not change under it";
  EXPECT_EQ(b.agent->Latest()->pass, 2u);
  EXPECT_NE(b.agent->Latest()->text, text);
}

TEST(Agent, HealthFollowsTheAgeOfTheLastPass) {
  ManualMonotonicClock clock;
  auto b = Build(&clock, 1000);
  b.agent->CollectOnce();
  EXPECT_TRUE(b.agent->Healthy());
  clock.AdvanceMs(2999);
  EXPECT_TRUE(b.agent->Healthy());
  clock.AdvanceMs(2);
  EXPECT_FALSE(b.agent->Healthy());
}

TEST(Agent, BadOptionsThrowAtConstruction) {
  ManualMonotonicClock clock;
  EXPECT_THROW(Agent(AgentOptions{"n", 0}, {}, clock), std::invalid_argument);
  EXPECT_THROW(Agent(AgentOptions{"", 1000}, {}, clock), std::invalid_argument);
}

// Waits for a condition with a generous bound; the test asserts the outcome, not the time.
template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 1000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(Agent, StartCollectsOnItsOwnThreadAndStopJoins) {
  SteadyClock clock;
  auto c = std::make_unique<FakeCollector>("alpha", nullptr);
  FakeCollector* raw = c.get();
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::move(c));
  Agent a(AgentOptions{"n", 100}, std::move(cs), clock);
  a.Start();
  EXPECT_TRUE(Eventually([&] { return raw->calls >= 2; }));
  a.Stop();
  const int after = raw->calls;
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(raw->calls, after) << "no pass after Stop()";
}

TEST(MetricsServer, ServesTheLatestPassAndHealth) {
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  MetricsServer server(*b.agent);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  ASSERT_GT(server.port(), 0);
  httplib::Client cli("127.0.0.1", server.port());
  auto r = cli.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << "nothing collected yet";
  EXPECT_EQ(cli.Get("/healthz")->status, 503);
  b.agent->CollectOnce();
  const int calls = b.a->calls;
  r = cli.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->body, b.agent->Latest()->text);
  EXPECT_EQ(b.a->calls, calls) << "a scrape must not run collectors";
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
  EXPECT_EQ(cli.Get("/nope")->status, 404);
  server.Stop();
}

TEST(MetricsServer, ABusyPortIsAStatusNotACrash) {
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  MetricsServer first(*b.agent);
  ASSERT_TRUE(first.Start("127.0.0.1", 0).ok());
  MetricsServer second(*b.agent);
  EXPECT_FALSE(second.Start("127.0.0.1", first.port()).ok());
}

std::string Pod(const std::string& name, const std::string& node, const std::string& phase,
                const std::string& extra_metadata, const std::string& container = "") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ml")" + extra_metadata +
         R"(},"spec":{"nodeName":")" + node + R"(","containers":[)" +
         (container.empty() ? R"({"name":"c","image":"busybox"})" : container) +
         R"(]},"status":{"phase":")" + phase + R"("}})";
}

std::string PodList(const std::vector<std::string>& pods) {
  std::string s = R"({"kind":"PodList","apiVersion":"v1","items":[)";
  for (std::size_t i = 0; i < pods.size(); ++i) s += (i ? "," : "") + pods[i];
  return s + "]}";
}

const std::string kNvlinkAnno = R"(,"annotations":{"ai.nvlink-required":"true"})";
const std::string kPytorch2 =
    R"({"name":"t","image":"pytorch/pytorch:2.3","resources":{"limits":{"nvidia.com/gpu":"2"}}})";
const std::string kPytorch1 =
    R"({"name":"t","image":"pytorch/pytorch:2.3","resources":{"limits":{"nvidia.com/gpu":"1"}}})";
const std::string kEnvNvlink =
    R"({"name":"t","image":"x","env":[{"name":"AI_NV_LINK_REQUIRED","value":"true"}]})";

struct PodsCase {
  const char* name;
  std::string list;
  bool ok;
  int count;
};

class CountNvlinkPodsCases : public ::testing::TestWithParam<PodsCase> {};

TEST_P(CountNvlinkPodsCases, CountsRunningNvlinkPodsOnThisNode) {
  int n = -1;
  const Status st = CountNvlinkPods(GetParam().list, "gpu-1", &n);
  ASSERT_EQ(st.ok(), GetParam().ok) << st.reason();
  if (GetParam().ok) {
    EXPECT_EQ(n, GetParam().count);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CountNvlinkPodsCases,
    ::testing::Values(
        PodsCase{"Empty_list", PodList({}), true, 0},
        PodsCase{"Annotation_running_here", PodList({Pod("a", "gpu-1", "Running", kNvlinkAnno)}),
                 true, 1},
        PodsCase{"Other_node_is_not_counted", PodList({Pod("a", "gpu-2", "Running", kNvlinkAnno)}),
                 true, 0},
        PodsCase{"Pending_and_succeeded_are_not_counted",
                 PodList({Pod("a", "gpu-1", "Pending", kNvlinkAnno),
                          Pod("b", "gpu-1", "Succeeded", kNvlinkAnno)}),
                 true, 0},
        PodsCase{"Env_flag", PodList({Pod("a", "gpu-1", "Running", "", kEnvNvlink)}), true, 1},
        PodsCase{"Pytorch_with_two_gpus_is_detected",
                 PodList({Pod("a", "gpu-1", "Running", "", kPytorch2)}), true, 1},
        PodsCase{"Pytorch_with_one_gpu_is_not",
                 PodList({Pod("a", "gpu-1", "Running", "", kPytorch1)}), true, 0},
        PodsCase{"Plain_pod_is_not", PodList({Pod("a", "gpu-1", "Running", "")}), true, 0},
        PodsCase{"Not_json", "{items: nope", false, 0},
        PodsCase{"Items_not_an_array", R"({"items":{}})", false, 0},
        PodsCase{"Item_not_a_pod", R"({"items":[42]})", false, 0}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(CompetitionCollector, WorkedCaseFromTheDesign) {
  // 2 NVLink pods on a 4-GPU node with 2 slots per GPU → 0.25.
  const std::string list = PodList(
      {Pod("a", "gpu-1", "Running", kNvlinkAnno), Pod("b", "gpu-1", "Running", kNvlinkAnno)});
  CompetitionCollector c(
      "gpu-1",
      [&](std::string* out) {
        *out = list;
        return Status();
      },
      [] { return std::optional<int>(4); }, 2);
  MetricSet s("gpu-1");
  ASSERT_TRUE(c.Collect(s).ok());
  EXPECT_EQ(Find(s, "ai_nvlink_competition_index", {{"node", "gpu-1"}}), 0.25);
  EXPECT_EQ(Find(s, "ai_nvlink_pods"), 2.0);
}

struct CompetitionDown {
  const char* name;
  bool with_source;
  std::optional<int> gpus;
  const char* reason_part;
};

class CompetitionDownCases : public ::testing::TestWithParam<CompetitionDown> {};

TEST_P(CompetitionDownCases, LeavesTheSeriesOutAndSaysWhy) {
  const auto& tc = GetParam();
  PodListSource src;
  if (tc.with_source)
    src = [](std::string* out) {
      *out = PodList({});
      return Status();
    };
  CompetitionCollector c("gpu-1", src, [g = tc.gpus] { return g; });
  MetricSet s("gpu-1");
  const Status st = c.Collect(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find(tc.reason_part), std::string::npos) << st.reason();
  EXPECT_FALSE(Find(s, "ai_nvlink_competition_index"));
}

INSTANTIATE_TEST_SUITE_P(Cases, CompetitionDownCases,
                         ::testing::Values(CompetitionDown{"No_pod_source", false, 4,
                                                           "--pods-file"},
                                           CompetitionDown{"Gpu_collector_down", true, std::nullopt,
                                                           "GPU count unknown"},
                                           CompetitionDown{"No_gpus", true, 0, "no GPUs"}),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace tidal::agent
