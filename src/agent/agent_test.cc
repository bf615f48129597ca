// The agent core (passes, up/duration series, snapshots, thread), the HTTP
// exposition in-process, and the competition index.
#include "tidal/agent/agent.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <new>
#include <stdexcept>
#include <thread>

#include "agent/agent_test_util.h"
#include "agent/exposition_check.h"
#include "testing/tls.h"
#include "tidal/agent/http.h"
#include "tidal/agent/pods.h"
#include "tidal/core/text.h"

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
    const int now = ++running;
    for (int seen = max_concurrent.load();
         now > seen && !max_concurrent.compare_exchange_weak(seen, now);) {
    }
    ++calls;
    out.Declare("fake_value", "A value from a fake collector.");
    out.Add("fake_value", {{"from", name_}}, calls);
    if (clock_) clock_->AdvanceMs(cost_ms);
    --running;
    return fail.empty() ? Status() : Status::Error(fail);
  }
  std::atomic<int> calls{0};
  std::atomic<int> running{0};
  std::atomic<int> max_concurrent{0};
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

// A collector failing mid-run (an NVML error between two passes) is down with
// its reason in the next exposition and up again in the one after it recovers;
// the other collector is served throughout.
TEST(Agent, ACollectorFailingMidRunIsDownThenUpAgain) {
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  const std::string up = "ai_collector_up{node=\"node-1\",collector=\"alpha\",reason=\"\"} 1\n";
  const std::string down =
      "ai_collector_up{node=\"node-1\",collector=\"alpha\",reason=\"nvmlDeviceGetCount: Unknown "
      "Error\"} 0\n";
  struct Step {
    const char* name;
    const char* fail;
    const std::string& want;
  };
  const Step steps[] = {{"healthy", "", up},
                        {"NVML error", "nvmlDeviceGetCount: Unknown Error", down},
                        {"recovered", "", up}};
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    b.a->fail = s.fail;
    b.agent->CollectOnce();
    const auto e = b.agent->Latest();
    ASSERT_NE(e, nullptr);
    EXPECT_NE(e->text.find(s.want), std::string::npos) << e->text;
    EXPECT_EQ(e->all_up, *s.fail == '\0');
    EXPECT_NE(e->text.find("collector=\"beta\",reason=\"\"} 1\n"), std::string::npos) << e->text;
    EXPECT_EQ(testing::CheckExposition(e->text), "") << e->text;
  }
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

// The executable hands down its release; the exposition ends with it, a valid
// family of its own. A caller that gives none (tests, an embedder) gets none.
TEST(Agent, EveryPassExportsTheBuildItWasGiven) {
  struct Case {
    const char* name;
    BuildInfo build;
    const char* want;  // "" when absent
  };
  const Case cases[] = {
      {"a checkout",
       {"0.1.0", "v0.1.0-3-g88583e7-dirty"},
       "tidal_build_info{version=\"0.1.0\",revision=\"v0.1.0-3-g88583e7-dirty\"} 1\n"},
      {"a source archive", {"0.1.0", ""}, "tidal_build_info{version=\"0.1.0\",revision=\"\"} 1\n"},
      {"none given", {}, ""},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ManualMonotonicClock clock;
    std::vector<std::unique_ptr<Collector>> cs;
    cs.push_back(std::make_unique<FakeCollector>("alpha", &clock));
    Agent a(AgentOptions{"n", 1000, tc.build}, std::move(cs), clock);
    a.CollectOnce();
    const std::string text = a.Latest()->text;
    EXPECT_EQ(testing::CheckExposition(text), "") << text;
    if (*tc.want == '\0') {
      EXPECT_EQ(text.find("tidal_build_info"), std::string::npos) << text;
      continue;
    }
    EXPECT_NE(text.find("# TYPE tidal_build_info gauge\n"), std::string::npos) << text;
    EXPECT_NE(text.find(tc.want), std::string::npos) << text;
  }
}

// A disk or GPU name of arbitrary bytes: the exposition stays UTF-8, and the
// log says so once per label, not every pass.
class NamesCollector final : public Collector {
 public:
  std::string_view Name() const override { return "names"; }
  Status Collect(MetricSet& out) override {
    out.Declare("fake_bytes", "A value per named device.");
    for (const auto& n : names) out.Add("fake_bytes", {{"device", n}}, 1);
    return Status();
  }
  std::vector<std::string> names;
};

TEST(Agent, ARepairedLabelIsLoggedOncePerLabel) {
  ManualMonotonicClock clock;
  auto c = std::make_unique<NamesCollector>();
  NamesCollector* names = c.get();
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::move(c));
  std::vector<std::string> warned;
  AgentOptions o{"n", 1000};
  o.warn = [&](const std::string& what) { warned.push_back(what); };
  Agent a(std::move(o), std::move(cs), clock);
  struct Pass {
    const char* name;
    std::vector<std::string> devices;
    std::vector<std::string> new_warnings;
  };
  const std::string repaired_line =
      "label value not UTF-8, each invalid sequence written as U+FFFD: ";
  const Pass passes[] = {
      {"valid names: nothing to say", {"sda", "disk \xC3\xA9"}, {}},
      {"a bad name", {"sda", "sd\xFF"}, {repaired_line + R"(device="sd\xff")"}},
      {"the same bad name again", {"sd\xFF", "sdb"}, {}},
      {"another one beside it",
       {"sd\xFF", "nv\xC0\xAF"},
       {repaired_line + R"(device="nv\xc0\xaf")"}},
  };
  for (const Pass& p : passes) {
    SCOPED_TRACE(p.name);
    names->names = p.devices;
    const std::size_t before = warned.size();
    a.CollectOnce();
    const std::string text = a.Latest()->text;
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_EQ(std::vector<std::string>(warned.begin() + before, warned.end()), p.new_warnings);
  }
  // Names that change every pass: bounded, with one line saying the rest go unsaid.
  for (int i = 0; i < 100; ++i) {
    names->names = {"sd\xFF" + std::to_string(i)};
    a.CollectOnce();
  }
  ASSERT_EQ(warned.size(), 33u);
  EXPECT_EQ(warned.back(), "more label values are not UTF-8; further repairs are not logged");
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

// CollectOnce may be called while the collection thread runs (a test, a future
// "collect now" endpoint): passes are serialised, so collectors, which keep
// per-pass state, are never run twice at once and pass numbers stay unique.
TEST(Agent, CollectOnceWhileTheThreadRunsIsSerialised) {
  SteadyClock clock;
  auto c = std::make_unique<FakeCollector>("alpha", nullptr);
  FakeCollector* raw = c.get();
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::move(c));
  Agent a(AgentOptions{"n", 1}, std::move(cs), clock);
  a.Start();
  std::uint64_t last = 0;
  bool increasing = true;
  for (int i = 0; i < 200; ++i) {
    a.CollectOnce();
    const std::uint64_t pass = a.Latest()->pass;
    increasing = increasing && pass > last;
    last = pass;
  }
  a.Stop();
  EXPECT_TRUE(increasing) << "each CollectOnce publishes a newer pass";
  EXPECT_EQ(a.Latest()->pass, static_cast<std::uint64_t>(raw->calls.load()))
      << "one collector call per pass";
  EXPECT_GT(raw->max_concurrent.load(), 0);
  EXPECT_EQ(raw->max_concurrent.load(), 1) << "a collector ran twice at once";
}

// Scrapes run on the server's threads while passes are published on the agent's:
// every body is one whole, valid exposition.
TEST(MetricsServer, ScrapesDuringCollectionSeeWholePasses) {
  SteadyClock clock;
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::make_unique<FakeCollector>("alpha", nullptr));
  cs.push_back(std::make_unique<FakeCollector>("beta", nullptr));
  Agent a(AgentOptions{"n", 2}, std::move(cs), clock);
  a.Start();
  MetricsServer server(a);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::atomic<int> bad{0}, ok{0};
  const auto scrape = [&] {
    httplib::Client cli("127.0.0.1", server.port());
    for (int i = 0; i < 100; ++i) {
      const auto r = cli.Get(i % 2 ? "/metrics" : "/healthz");
      if (!r || (r->status == 200 && i % 2 && !testing::CheckExposition(r->body).empty()))
        ++bad;
      else
        ++ok;
    }
  };
  std::thread t1(scrape), t2(scrape);
  t1.join();
  t2.join();
  server.Stop();
  a.Stop();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(ok.load(), 200);
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
  EXPECT_EQ(r->body.rfind(b.agent->Latest()->text, 0), 0u) << "the pass first";
  EXPECT_NE(r->body.find("ai_agent_http_refused_total{reason=\"body_too_large\"} 0"),
            std::string::npos)
      << "then the HTTP server's own counters";
  EXPECT_EQ(b.a->calls, calls) << "a scrape must not run collectors";
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
  EXPECT_EQ(cli.Get("/nope")->status, 404);
  server.Stop();
}

// A handler that throws: a 500 with a body saying what happened, a line through
// the agent's warn, and ai_agent_http_errors_total on the next scrape.
TEST(MetricsServer, AnExceptionIsAnswered500LoggedAndCounted) {
  ManualMonotonicClock clock;
  std::vector<std::string> warned;
  std::vector<std::unique_ptr<Collector>> cs;
  cs.push_back(std::make_unique<FakeCollector>("alpha", &clock));
  AgentOptions o{"node-1", 10'000};
  o.warn = [&](const std::string& what) { warned.push_back(what); };
  Agent a(std::move(o), std::move(cs), clock);
  a.CollectOnce();
  MetricsServer server(a);
  std::function<void()> fault;
  server.SetHandlerHookForTest([&] { fault(); });
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  httplib::Client cli("127.0.0.1", server.port());
  struct Case {
    const char* name;
    std::function<void()> fault;
    const char* path;
    const char* body;
    const char* warning;
  };
  const Case cases[] = {
      {"out of memory in /metrics", [] { throw std::bad_alloc(); }, "/metrics",
       "tidal agent: internal error on /metrics: out of memory (std::bad_alloc)\n",
       "GET /metrics: answered 500: out of memory (std::bad_alloc)"},
      {"a std::exception in /healthz", [] { throw std::runtime_error("boom"); }, "/healthz",
       "tidal agent: internal error on /healthz: boom\n", "GET /healthz: answered 500: boom"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fault = c.fault;
    auto r = cli.Get(c.path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body, c.body);
    ASSERT_FALSE(warned.empty());
    EXPECT_EQ(warned.back(), c.warning);
  }
  fault = [] {};
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(testing::CheckExposition(m->body), "") << m->body;
  EXPECT_NE(m->body.find("ai_agent_http_errors_total{node=\"node-1\",path=\"/metrics\","
                         "reason=\"bad_alloc\"} 1\n"),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("ai_agent_http_errors_total{node=\"node-1\",path=\"/healthz\","
                         "reason=\"exception\"} 1\n"),
            std::string::npos)
      << m->body;
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

// The worked case of docs/design.md#nvlink.
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

// Requests beyond the server's limits are refused before any handler runs, and
// the server keeps serving afterwards.
struct LimitCase {
  const char* name;
  int headers;       // extra headers of 8 bytes each
  int big_headers;   // extra headers of 6000 bytes each
  std::size_t body;  // POST body bytes (0: a GET)
  int want_status;
};

class ServerLimitCases : public ::testing::TestWithParam<LimitCase> {};

TEST_P(ServerLimitCases, OversizedRequestsAreRefused) {
  const LimitCase& tc = GetParam();
  ManualMonotonicClock clock;
  auto b = Build(&clock);
  b.agent->CollectOnce();
  MetricsServer server(*b.agent);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  httplib::Client cli("127.0.0.1", server.port());
  httplib::Headers headers;
  for (int i = 0; i < tc.headers; ++i) headers.emplace("X-H" + std::to_string(i), "12345678");
  for (int i = 0; i < tc.big_headers; ++i)
    headers.emplace("X-Big" + std::to_string(i), std::string(6000, 'a'));
  const auto r = tc.body > 0
                     ? cli.Post("/metrics", headers, std::string(tc.body, 'x'), "text/plain")
                     : cli.Get("/metrics", headers);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, tc.want_status);
  const auto after = httplib::Client("127.0.0.1", server.port()).Get("/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << "the server keeps serving";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ServerLimitCases,
    ::testing::Values(LimitCase{"Plain_scrape", 0, 0, 0, 200},
                      LimitCase{"Fifty_headers_pass", 50, 0, 0, 200},
                      LimitCase{"Two_hundred_small_headers_pass", 200, 0, 0, 200},
                      LimitCase{"Headers_over_the_bytes_limit", 2000, 0, 0, 431},
                      LimitCase{"Two_large_headers_pass", 0, 2, 0, 200},
                      LimitCase{"Header_bytes_over_the_total", 0, 3, 0, 431},
                      LimitCase{"Post_is_not_allowed", 0, 0, 100, 405},
                      LimitCase{"Body_over_the_limit", 0, 0, 1 << 20, 413}),
    [](const auto& p) { return std::string(p.param.name); });

struct TrustCase {
  const char* name;
  std::string url;
  std::string ca_flag;
  bool insecure;
  bool sa_ca_present;
  bool ok;
  std::string want_ca;  // when ok
  bool want_insecure;
  const char* error_part;
};

class KubeletTrustCases : public ::testing::TestWithParam<TrustCase> {};

TEST_P(KubeletTrustCases, VerifiesUnlessExplicitlySkipped) {
  const TrustCase& tc = GetParam();
  const auto exists = [&](const std::string& path) {
    return path == "/etc/kubelet-ca.pem" || (tc.sa_ca_present && path == kServiceAccountCa);
  };
  KubeletOptions o;
  const Status st =
      ResolveKubeletTrust(tc.url, tc.ca_flag, tc.insecure, kServiceAccountCa, exists, &o);
  ASSERT_EQ(st.ok(), tc.ok) << st.reason();
  if (tc.ok) {
    EXPECT_EQ(o.ca_file, tc.want_ca);
    EXPECT_EQ(o.insecure_skip_verify, tc.want_insecure);
    EXPECT_EQ(o.url, tc.url);
  } else {
    EXPECT_NE(st.reason().find(tc.error_part), std::string::npos) << st.reason();
  }
}

const std::string kKubelet = "https://10.0.0.7:10250/pods";

INSTANTIATE_TEST_SUITE_P(
    Cases, KubeletTrustCases,
    ::testing::Values(
        TrustCase{"In_cluster_uses_the_service_account_ca", kKubelet, "", false, true, true,
                  kServiceAccountCa, false, ""},
        TrustCase{"Explicit_ca_wins", kKubelet, "/etc/kubelet-ca.pem", false, true, true,
                  "/etc/kubelet-ca.pem", false, ""},
        TrustCase{"No_ca_anywhere_is_an_error", kKubelet, "", false, false, false, "", false,
                  "--kubelet-insecure-skip-verify"},
        TrustCase{"Missing_ca_file", kKubelet, "/nope.pem", false, true, false, "", false,
                  "--kubelet-ca /nope.pem: no such file"},
        TrustCase{"Skipping_takes_the_flag", kKubelet, "", true, true, true, "", true, ""},
        TrustCase{"Ca_and_skip_contradict", kKubelet, "/etc/kubelet-ca.pem", true, true, false, "",
                  false, "contradict"},
        TrustCase{"Plain_http_needs_no_ca", "http://127.0.0.1:10255/pods", "", false, false, true,
                  "", false, ""},
        TrustCase{"A_ca_for_plain_http_is_a_mistake", "http://127.0.0.1:10255/pods",
                  "/etc/kubelet-ca.pem", false, false, false, "", false, "plain http"},
        TrustCase{"Not_a_url", "10.0.0.7:10250", "", false, true, false, "", false,
                  "expected https://"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(KubeletPodSource, HttpsWithoutACaIsRefusedBeforeConnecting) {
  KubeletOptions o;
  o.url = "https://127.0.0.1:1/pods";
  o.token_file.clear();
  std::string out;
  const Status st = KubeletPodSource(o)(&out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("no CA"), std::string::npos) << st.reason();
}

TEST(KubeletPodSource, HttpsWithoutTheTlsModuleSaysWhereItLooked) {
  KubeletOptions o;
  o.url = "https://127.0.0.1:1/pods";
  o.token_file.clear();
  o.insecure_skip_verify = true;
  o.tls_module = "/nonexistent/tidal-https.so";
  std::string out;
  const Status st = KubeletPodSource(o)(&out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("https needs the TLS module tidal-https.so"), std::string::npos)
      << st.reason();
  EXPECT_NE(st.reason().find("/nonexistent/tidal-https.so"), std::string::npos) << st.reason();
}

struct BodyCase {
  const char* name;
  std::size_t body;
  std::size_t limit;
  bool ok;
};

class KubeletBodyCases : public ::testing::TestWithParam<BodyCase> {};

TEST_P(KubeletBodyCases, APodListOverTheLimitIsRefused) {
  const BodyCase& tc = GetParam();
  httplib::Server kubelet;
  const std::string body = PodList({}) + std::string(tc.body, ' ');
  kubelet.Get("/pods", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  const int port = kubelet.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { kubelet.listen_after_bind(); });
  while (!kubelet.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  KubeletOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/pods";
  o.token_file.clear();
  o.max_body_bytes = tc.limit;
  std::string out;
  const Status st = KubeletPodSource(o)(&out);
  kubelet.stop();
  t.join();
  ASSERT_EQ(st.ok(), tc.ok) << st.reason();
  if (tc.ok) {
    EXPECT_EQ(out, body);
  } else {
    EXPECT_NE(st.reason().find("larger than"), std::string::npos) << st.reason();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, KubeletBodyCases,
                         ::testing::Values(BodyCase{"Under_the_limit", 1000, 4096, true},
                                           BodyCase{"Over_the_limit", 100'000, 4096, false}),
                         [](const auto& p) { return std::string(p.param.name); });

struct TlsCase {
  const char* name;
  bool give_ca;   // the test CA as --kubelet-ca
  bool skip;      // --kubelet-insecure-skip-verify
  bool wrong_ca;  // a CA that did not sign the kubelet's certificate
  const char* host;
  bool ok;
  const char* error_part;
};

class KubeletTlsCases : public ::testing::TestWithParam<TlsCase> {};

// The pod list over HTTPS from a kubelet stand-in whose certificate the test CA
// signed for 127.0.0.1 and localhost.
TEST_P(KubeletTlsCases, VerifiesTheKubeletsCertificate) {
  const TlsCase& tc = GetParam();
  tidal::testing::TempDir dir;
  const tidal::testing::TestPki pki = tidal::testing::MakeTestPki(dir);
  const tidal::testing::TestPki other = tidal::testing::MakeTestPki(dir, "other-");
  httplib::SSLServer kubelet(pki.server_cert_file.c_str(), pki.server_key_file.c_str());
  const std::string body = PodList({});
  std::string seen_auth;
  kubelet.Get("/pods", [&](const httplib::Request& req, httplib::Response& res) {
    seen_auth = req.get_header_value("Authorization");
    res.set_content(body, "application/json");
  });
  const int port = kubelet.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { kubelet.listen_after_bind(); });
  while (!kubelet.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string token = dir.Write("token", "secret-token\n");
  KubeletOptions o;
  o.url = std::string("https://") + tc.host + ":" + std::to_string(port) + "/pods";
  o.token_file = token;
  o.timeout_ms = 5000;
  if (tc.give_ca) o.ca_file = tc.wrong_ca ? other.ca_file : pki.ca_file;
  o.insecure_skip_verify = tc.skip;
  o.tls_module = TIDAL_TLS_MODULE;
  std::string out;
  const Status st = KubeletPodSource(o)(&out);
  kubelet.stop();
  t.join();
  ASSERT_EQ(st.ok(), tc.ok) << st.reason();
  if (tc.ok) {
    EXPECT_EQ(out, body);
    EXPECT_EQ(seen_auth, "Bearer secret-token");
  } else {
    EXPECT_NE(st.reason().find(tc.error_part), std::string::npos) << st.reason();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KubeletTlsCases,
    ::testing::Values(
        TlsCase{"Verified_by_its_ca", true, false, false, "127.0.0.1", true, ""},
        TlsCase{"Verified_by_name", true, false, false, "localhost", true, ""},
        TlsCase{"Another_ca_is_refused", true, false, true, "127.0.0.1", false, "TLS handshake"},
        TlsCase{"Skipping_takes_the_flag", false, true, false, "127.0.0.1", true, ""}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(KubeletPodSource, ASilentKubeletTimesOut) {
  // Accepts the connection and never answers.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  KubeletOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/pods";
  o.token_file.clear();
  o.timeout_ms = 300;
  std::string out;
  const Status st = KubeletPodSource(o)(&out);
  ::close(listener);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("timed out"), std::string::npos) << st.reason();
}

// The competition series count pods; no pod's name, namespace or annotation value
// reaches the exposition, even when an item is malformed and the reason is shown.
TEST(CompetitionCollector, ExposesNoPodNames) {
  const std::vector<std::string> lists = {
      PodList({Pod("secret-train-job", "gpu-1", "Running", kNvlinkAnno)}),
      PodList({Pod("secret-train-job", "gpu-1", "Running",
                   R"(,"annotations":{"ai.gpu-memory":"secret-value"})")}),
      PodList({Pod("secret-train-job", "gpu-1", "Running", R"(,"labels":{"a":["secret-x"]})")}),
  };
  for (const std::string& list : lists) {
    SCOPED_TRACE(list);
    std::vector<std::unique_ptr<Collector>> cs;
    cs.push_back(std::make_unique<CompetitionCollector>(
        "gpu-1",
        [&](std::string* out) {
          *out = list;
          return Status();
        },
        [] { return std::optional<int>(4); }));
    ManualMonotonicClock clock;
    Agent a(AgentOptions{"gpu-1", 1000}, std::move(cs), clock);
    a.CollectOnce();
    const std::string text = a.Latest()->text;
    EXPECT_NE(text.find("ai_collector_up"), std::string::npos);
    EXPECT_EQ(text.find("secret"), std::string::npos) << text;
    EXPECT_EQ(text.find("\"ml\""), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace tidal::agent
