// The verbs end to end without HTTP: a scripted metrics source, a manual clock,
// the refresher driven by hand.
#include "tidal/extender/extender.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>

#include <nlohmann/json.hpp>

#include "tidal/extender/kube_sync.h"
#include "tidal/extender/refresher.h"

namespace tidal::extender {
namespace {

using nlohmann::json;
constexpr Bytes kGi = Bytes{1} << 30;

class ScriptedSource final : public MetricsSource {
 public:
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override {
    if (clock) clock->Advance(takes_ms);  // a slow source, on the manual clock
    if (!error.empty()) return Status::Error(error);
    *out = snapshot;
    out->fetched_at_ms = now_ms;
    for (auto& [name, m] : out->nodes)
      if (m.sample_time_ms == 0) m.sample_time_ms = now_ms - 5'000;
    return Status::Ok();
  }
  std::string Describe() const override { return "scripted"; }
  MetricsSnapshot snapshot;
  std::string error;
  ManualClock* clock = nullptr;
  TimeMs takes_ms = 0;
};

// A node of 4 × 24 GiB GPUs, all at `used_fraction`, fully NVLinked.
NodeMetrics Node(double used_fraction, double await_ms = 5) {
  NodeMetrics m;
  for (int i = 0; i < 4; ++i) {
    Gpu g;
    g.index = i;
    g.memory_total = 24 * kGi;
    g.memory_used = static_cast<Bytes>(used_fraction * 24 * kGi);
    for (int j = 0; j < 4; ++j)
      if (j != i) g.nvlink_peers.push_back({j, 4});
    m.gpus.push_back(g);
  }
  m.storage_await_ms = await_ms;
  return m;
}

std::string PodJson(int gpus, const json& annotations = json::object()) {
  json pod = {{"metadata", {{"name", "train-1"}, {"namespace", "ml"}, {"uid", "u-1"}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"image", "nvcr.io/nvidia/pytorch:24.01"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod.dump();
}

std::string NamesArgs(const std::string& pod, const std::vector<std::string>& names) {
  return R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":)" + json(names).dump() + "}";
}

// Nodes mode: 4 allocatable GPUs each, `requested` already requested... via labels only.
std::string NodesArgs(const std::string& pod,
                      const std::vector<std::pair<std::string, json>>& nodes) {
  json items = json::array();
  for (const auto& [name, labels] : nodes)
    items.push_back(
        {{"metadata", {{"name", name}, {"labels", labels}}},
         {"status",
          {{"allocatable", {{"nvidia.com/gpu", "4"}, {"cpu", "32"}, {"memory", "256Gi"}}}}}});
  return R"({"Pod":)" + pod + R"(,"Nodes":{"metadata":{},"items":)" + items.dump() +
         R"(},"NodeNames":null})";
}

struct Fixture {
  Fixture()
      : log(std::make_shared<spdlog::logger>(
            "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(logs))) {
    clock.Set(1'000'000);
    config = DefaultPolicyConfig();
    source.snapshot.nodes = {{"idle", Node(0.10)},
                             {"warm", Node(0.78)},
                             {"full", Node(0.95)},
                             {"slow-disk", Node(0.10, 90)}};
    ext = std::make_unique<Extender>(config, store, clock, log, &metrics);
    refresher =
        std::make_unique<Refresher>(source, store, catalog, clock, config.metric_cache_ttl_ms, log);
  }
  std::ostringstream logs;
  ManualClock clock;
  PolicyConfig config;
  ScriptedSource source;
  ViewStore store;
  NodeCatalog catalog;
  ExtenderMetrics metrics;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<Extender> ext;
  std::unique_ptr<Refresher> refresher;
};

std::vector<std::string> Names(const json& j) {
  std::vector<std::string> out;
  for (const auto& n : j) out.push_back(n.get<std::string>());
  return out;
}

std::map<std::string, int> Scores(const std::string& body) {
  std::map<std::string, int> out;
  for (const auto& hp : json::parse(body)) out[hp["Host"]] = hp["Score"];
  return out;
}

TEST(Extender, FiltersAndScoresOnLiveLoad) {
  Fixture f;
  f.refresher->RefreshOnce();
  const std::vector<std::string> all{"idle", "warm", "full", "slow-disk", "no-series"};
  const std::string args = NamesArgs(PodJson(1, {{"ai.gpu-memory", "4Gi"}}), all);
  Reply r = f.ext->Filter(args);
  ASSERT_EQ(r.http_status, 200);
  const json j = json::parse(r.body);
  EXPECT_TRUE(j["Nodes"].is_null());
  EXPECT_EQ(Names(j["NodeNames"]), (std::vector<std::string>{"idle", "warm", "no-series"}))
      << j.dump();
  // No '%': kube-scheduler's events would mangle it.
  EXPECT_EQ(j["FailedNodes"]["full"],
            "tidal: loadaware: GPU memory 95 percent over reject threshold 82 percent");
  EXPECT_EQ(j["FailedNodes"]["slow-disk"],
            "tidal: loadaware: storage await 90.0 ms over reject threshold 67.9 ms");
  EXPECT_TRUE(j["FailedAndUnresolvableNodes"].empty());
  EXPECT_EQ(j["Error"], "");

  // Prioritize gets the survivors in the same order; scores in 0..10, idle first,
  // the warning-band node decayed, the unknown node at a penalty.
  const auto scores = Scores(f.ext
                                 ->Prioritize(NamesArgs(PodJson(1, {{"ai.gpu-memory", "4Gi"}}),
                                                        {"idle", "warm", "no-series"}))
                                 .body);
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_EQ(scores.at("idle"), 10);
  EXPECT_LT(scores.at("no-series"), 10);
  EXPECT_LT(scores.at("warm"), 10);
  for (const auto& [n, s] : scores) EXPECT_TRUE(s >= 0 && s <= 10) << n;
  EXPECT_DOUBLE_EQ(f.metrics.unknown_nodes.Get(), 1);

  // The same answer without the filter memo (another pod key).
  const auto fresh =
      Scores(f.ext
                 ->Prioritize(NamesArgs(PodJson(1, {{"ai.gpu-memory", "4Gi"}, {"x", "y"}}),
                                        {"idle", "warm", "no-series"}))
                 .body);
  EXPECT_EQ(fresh, scores);
}

TEST(Extender, UnresolvableWherePreemptionCannotHelp) {
  Fixture f;
  f.refresher->RefreshOnce();
  struct Case {
    const char* name;
    std::string pod;
    const char* want;
  };
  const Case cases[] = {
      {"malformed annotation", PodJson(1, {{"ai.gpu-reject-threshold", "high"}}),
       "ai.gpu-reject-threshold"},
      {"more GPUs than any node has", PodJson(8), "pod needs 8 GPUs, node has 4"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const json j = json::parse(f.ext->Filter(NamesArgs(tc.pod, {"idle", "warm"})).body);
    EXPECT_TRUE(j["NodeNames"].empty());
    ASSERT_EQ(j["FailedAndUnresolvableNodes"].size(), 2u) << j.dump();
    EXPECT_NE(j["FailedAndUnresolvableNodes"]["idle"].get<std::string>().find(tc.want),
              std::string::npos)
        << j.dump();
  }
}

TEST(Extender, MalformedRequestsAreErrorsNotEmptyPassLists) {
  Fixture f;
  f.refresher->RefreshOnce();
  for (const std::string& body :
       {std::string("{\"Pod\":"), std::string("[]"), std::string(R"({"Pod":{}})")}) {
    SCOPED_TRACE(body);
    Reply r = f.ext->Filter(body);
    const json j = json::parse(r.body);
    EXPECT_NE(j["Error"].get<std::string>(), "");
    EXPECT_EQ(f.ext->Prioritize(body).http_status, 400);
  }
}

// More candidates than any cluster has: an error naming the limit, before any
// node is evaluated (a 10^6-name request would otherwise cost gigabytes).
TEST(Extender, MoreCandidatesThanTheLimitAreAnError) {
  Fixture f;
  f.refresher->RefreshOnce();
  struct Case {
    const char* name;
    std::size_t names;
    bool want_error;
  };
  const Case cases[] = {
      {"at the limit", Extender::kMaxCandidates, false},
      {"one over", Extender::kMaxCandidates + 1, true},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::vector<std::string> names(tc.names);
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = "n" + std::to_string(i);
    const json j = json::parse(f.ext->Filter(NamesArgs(PodJson(1), names)).body);
    const std::string error = j["Error"].get<std::string>();
    if (tc.want_error) {
      EXPECT_NE(error.find("NodeNames: 50001 candidates, expected at most 50000"),
                std::string::npos)
          << error;
    } else {
      EXPECT_EQ(error, "");
    }
  }
}

TEST(Extender, StaleAndUnusableNodesAreUnknownNotIdle) {
  Fixture f;
  f.source.snapshot.nodes["old"] = Node(0.95);
  f.source.snapshot.nodes["old"].sample_time_ms =
      1'000'000 - 61'000;  // older than metricsStaleAfter
  f.source.snapshot.nodes["dup"] = Node(0.95);
  f.source.snapshot.nodes["dup"].usable = false;
  f.source.snapshot.nodes["dup"].problems = {"duplicated series disagree"};
  f.refresher->RefreshOnce();
  const json j = json::parse(f.ext->Filter(NamesArgs(PodJson(1), {"idle", "old", "dup"})).body);
  // Neither reading is trusted: not rejected as full, not taken as idle either.
  EXPECT_EQ(Names(j["NodeNames"]), (std::vector<std::string>{"idle", "old", "dup"}));
  const auto scores = Scores(f.ext->Prioritize(NamesArgs(PodJson(1), {"idle", "old", "dup"})).body);
  EXPECT_LT(scores.at("old"), scores.at("idle"));
  EXPECT_EQ(scores.at("old"), scores.at("dup"));
}

// Stage 2 with no node in the golden pool would reject every node: stage 1's
// ranking goes on, and the gauge raises the alert until a golden node appears.
TEST(Extender, StageTwoWithAnEmptyGoldenPoolKeepsStageOnesRanking) {
  Fixture f;
  f.refresher->RefreshOnce();
  f.source.error = "connection refused";
  f.clock.Advance(1'000);
  f.refresher->RefreshOnce();
  f.clock.Advance(f.config.fallback.stage2_after_ms);
  const std::string pod = PodJson(1, {{"ai.gpu-memory", "4Gi"}});
  json j = json::parse(f.ext->Filter(NamesArgs(pod, {"idle", "warm", "full"})).body);
  EXPECT_EQ(Names(j["NodeNames"]), (std::vector<std::string>{"idle", "warm"})) << j.dump();
  EXPECT_DOUBLE_EQ(f.metrics.fallback_stage.Get(), 1);
  EXPECT_DOUBLE_EQ(f.metrics.golden_pool_empty.Get(), 1);
  EXPECT_NE(f.logs.str().find("no node is in the golden pool"), std::string::npos) << f.logs.str();

  // A node is labelled into the pool (the API watch): stage 2 proper.
  NodeInfo golden;
  golden.labels = {{"tidal.io/pool", "golden"}};
  f.catalog.Put("warm", golden);
  f.refresher->Republish();
  j = json::parse(f.ext->Filter(NamesArgs(pod, {"idle", "warm", "full"})).body);
  EXPECT_EQ(Names(j["NodeNames"]), (std::vector<std::string>{"warm"})) << j.dump();
  EXPECT_DOUBLE_EQ(f.metrics.fallback_stage.Get(), 2);
  EXPECT_DOUBLE_EQ(f.metrics.golden_pool_empty.Get(), 0);
}

TEST(Extender, FallsBackInTwoStagesAndRecovers) {
  Fixture f;
  f.refresher->RefreshOnce();
  const std::vector<std::pair<std::string, json>> nodes{
      {"idle", json::object()}, {"warm", {{"tidal.io/pool", "golden"}}}, {"full", json::object()}};
  const std::string pod = PodJson(1, {{"ai.gpu-memory", "4Gi"}});
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 0);

  // The source fails: stage 1 at once. Fresh readings still filter (full is still
  // rejected); scores are remaining allocatable GPUs, all equal here.
  f.source.error = "connection refused";
  f.clock.Advance(1'000);
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 1);
  json j = json::parse(f.ext->Filter(NodesArgs(pod, nodes)).body);
  ASSERT_EQ(j["Nodes"]["items"].size(), 2u) << j["FailedNodes"].dump();
  EXPECT_EQ(j["Nodes"]["items"][0]["metadata"]["name"], "idle");
  EXPECT_TRUE(j["NodeNames"].is_null());
  auto scores = Scores(f.ext->Prioritize(NodesArgs(pod, {nodes[0], nodes[1]})).body);
  EXPECT_EQ(scores.at("idle"), 10);
  EXPECT_EQ(scores.at("warm"), 10) << "stage 1 ranks by remaining GPUs, not by load";
  EXPECT_DOUBLE_EQ(f.metrics.fallback_stage.Get(), 1);

  // After stage2After (10 s): only the golden pool. The view has no labels here
  // (no API watch): the Node objects sent in stage 1 showed a golden node.
  f.clock.Advance(10'000);
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 2);
  j = json::parse(f.ext->Filter(NodesArgs(pod, nodes)).body);
  ASSERT_EQ(j["Nodes"]["items"].size(), 1u) << j.dump();
  EXPECT_EQ(j["Nodes"]["items"][0]["metadata"]["name"], "warm");
  EXPECT_NE(j["FailedNodes"]["idle"].get<std::string>().find("fallback stage 2"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(f.metrics.fallback_stage.Get(), 2);

  // Metrics return: normal again, by itself.
  f.source.error.clear();
  f.clock.Advance(5'000);
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 0);
  j = json::parse(f.ext->Filter(NodesArgs(pod, nodes)).body);
  EXPECT_EQ(j["Nodes"]["items"].size(), 2u);
  EXPECT_DOUBLE_EQ(f.metrics.fallback_stage.Get(), 0);
  const std::string logs = f.logs.str();
  EXPECT_NE(logs.find("fallback: stage 1"), std::string::npos) << logs;
  EXPECT_NE(logs.find("fallback: stage 2"), std::string::npos) << logs;
  EXPECT_NE(logs.find("metrics are back"), std::string::npos) << logs;
}

TEST(Extender, AHangingSourceIsAFailureOnceTheSnapshotIsOverdue) {
  Fixture f;
  NodeInfo golden;
  golden.labels = {{"tidal.io/pool", "golden"}};
  f.catalog.Put("warm", golden);
  f.refresher->RefreshOnce();
  // No attempt completes: after ttl + query timeout + 1 s the snapshot is overdue.
  const TimeMs overdue =
      f.config.metric_cache_ttl_ms + kQueriesPerFetch * f.config.query_timeout_ms + 1'000;
  f.clock.Advance(overdue);
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 0);
  f.clock.Advance(1);
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 1);
  f.clock.Advance(f.config.fallback.stage2_after_ms);
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 2);
}

TEST(Extender, ASlowSourceThatAnswersWithinItsTimeoutStaysInStageZero) {
  Fixture f;
  f.refresher->WarnSlowerThan(f.config.query_timeout_ms / 2);
  // Both queries of a fetch take just under queryTimeout (4.9 of 5 s).
  f.source.clock = &f.clock;
  f.source.takes_ms = kQueriesPerFetch * (f.config.query_timeout_ms - 100);
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 0);
  EXPECT_EQ(f.store.Load()->health.last_fetch_duration_ms, f.source.takes_ms);
  // The refresher waits metricCacheTTL after a fetch ends; the next fetch is as slow.
  // Until it ends the snapshot is not overdue: a slow source is not a failing one.
  f.clock.Advance(f.config.metric_cache_ttl_ms + f.source.takes_ms - 1);
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 0);
  EXPECT_NE(f.logs.str().find("is slow: the fetch took 9800 ms"), std::string::npos)
      << f.logs.str();
  f.source.takes_ms = 10;
  f.refresher->RefreshOnce();
  EXPECT_NE(f.logs.str().find("fast again"), std::string::npos) << f.logs.str();
  EXPECT_FALSE(f.store.Load()->health.slow);
}

TEST(Extender, UnusableReadingsAreCountedAndLoggedWhenTheirNumberChanges) {
  Fixture f;
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.store.Load()->health.unusable_nodes, 0u);
  f.source.snapshot.nodes["warm"].usable = false;
  f.source.snapshot.nodes["warm"].problems = {"ai_gpu_memory_used_bytes = nan"};
  f.refresher->RefreshOnce();
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.store.Load()->health.unusable_nodes, 1u);
  const std::string logs = f.logs.str();
  EXPECT_NE(logs.find("1 nodes have unusable readings and are unknown (warm: ai_gpu"),
            std::string::npos)
      << logs;
  const auto first = logs.find("have unusable readings");
  ASSERT_NE(first, std::string::npos) << logs;
  EXPECT_EQ(logs.find("have unusable readings", first + 1), std::string::npos) << "logged once";
  f.source.snapshot.nodes["warm"].usable = true;
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.store.Load()->health.unusable_nodes, 0u);
  EXPECT_NE(f.logs.str().find("usable again"), std::string::npos);
}

TEST(Extender, BeforeTheFirstFetchIsStageOne) {
  Fixture f;
  EXPECT_EQ(f.ext->Stage(f.clock.NowMs(), *f.store.Load()), 1);
  const json dbg = json::parse(f.ext->DebugNodes());
  EXPECT_TRUE(dbg["snapshotAgeSeconds"].is_null());
}

TEST(Extender, DebugNodesListsBothSidesOfTheJoin) {
  Fixture f;
  f.refresher->RefreshOnce();
  f.ext->Filter(NamesArgs(PodJson(1), {"idle", "warm", "ghost"}));
  const json dbg = json::parse(f.ext->DebugNodes());
  EXPECT_EQ(Names(dbg["nodesWithoutSeries"]), std::vector<std::string>{"ghost"});
  EXPECT_EQ(Names(dbg["seriesWithoutNode"]), (std::vector<std::string>{"full", "slow-disk"}));
  EXPECT_EQ(dbg["stage"], 0);
}

// Without the agent, the competition index comes from the pod watch: two nodes
// whose metrics are the same and whose NVLink pods differ are told apart, as
// the agent's series would tell them apart.
// The GPU workload fgd's `tasks: learned` reads: each GPU pod a filter names,
// once (kube-scheduler filters a pending pod again on every retry); neither CPU
// pods nor prioritize calls add to it; without a plugin that reads it, nothing.
TEST(Extender, LearnsTheGpuWorkloadFromThePodsItFilters) {
  Fixture f;
  std::erase_if(f.config.plugins, [](const PluginConfig& p) { return p.name == "fgd"; });
  f.ext = std::make_unique<Extender>(f.config, f.store, f.clock, f.log, &f.metrics);
  f.refresher->RefreshOnce();
  f.ext->Filter(NamesArgs(PodJson(1), {"idle", "warm"}));
  EXPECT_EQ(f.ext->learned_workload().pods_seen(), 0u) << "without fgd nothing reads it";
  f.config.plugins.push_back({"fgd", true, 1, "{tasks: learned}"});
  f.ext = std::make_unique<Extender>(f.config, f.store, f.clock, f.log, &f.metrics);
  auto pod = [](const std::string& uid, int gpus) {
    json p = json::parse(PodJson(gpus));
    p["metadata"]["uid"] = uid;
    p["metadata"]["name"] = "p-" + uid;
    return p.dump();
  };
  const WorkloadLearner& learned = f.ext->learned_workload();
  EXPECT_EQ(learned.Current(), nullptr);
  for (int retry = 0; retry < 3; ++retry) f.ext->Filter(NamesArgs(pod("a", 1), {"idle", "warm"}));
  EXPECT_EQ(learned.pods_seen(), 1u);
  f.ext->Filter(NamesArgs(pod("cpu", 0), {"idle", "warm"}));
  f.ext->Prioritize(NamesArgs(pod("p", 2), {"idle", "warm"}));
  EXPECT_EQ(learned.pods_seen(), 1u);
  f.ext->Filter(NamesArgs(pod("b", 4), {"idle", "warm"}));
  EXPECT_EQ(learned.pods_seen(), 2u);
  const auto w = learned.Current();
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->tasks.size(), 2u);
  EXPECT_EQ(w->tasks[0].gpus + w->tasks[1].gpus, 5) << "one 1-GPU and one 4-GPU task type";
}

// The learned workload is weighed by scarcity over the nodes the refresher
// builds (serve wires Refresher::OnNodesBuilt to SupplyWorkload). Three 1-GPU
// pods and one 8-GPU pod learned; the four nodes have 4 free GPUs each, so the
// 1-GPU type fits 4 nodes and the 8-GPU type none (counted as one): weights
// about ¾ / √4 and ¼ / √1, re-normalised 0.6 and 0.4.
TEST(Extender, WeighsTheLearnedWorkloadByTheNodesTheRefresherBuilt) {
  Fixture f;
  std::erase_if(f.config.plugins, [](const PluginConfig& p) { return p.name == "fgd"; });
  f.config.plugins.push_back({"fgd", true, 1, "{tasks: learned}"});
  f.ext = std::make_unique<Extender>(f.config, f.store, f.clock, f.log, &f.metrics);
  f.refresher->OnNodesBuilt([&f](const auto& nodes) { f.ext->SupplyWorkload(nodes); });
  f.refresher->RefreshOnce();
  auto pod = [](const std::string& uid, int gpus) {
    json p = json::parse(PodJson(gpus));
    p["metadata"]["uid"] = uid;
    p["metadata"]["name"] = "p-" + uid;
    return p.dump();
  };
  for (const char* uid : {"a", "b", "c"}) f.ext->Filter(NamesArgs(pod(uid, 1), {"idle", "warm"}));
  f.ext->Filter(NamesArgs(pod("big", 8), {"idle", "warm"}));
  auto weight_of = [&](int gpus) {
    for (const FgdTask& t : f.ext->learned_workload().Current()->tasks)
      if (t.gpus == gpus) return t.weight;
    return -1.0;
  };
  // The supply was counted before these types were learned: each fits every
  // node, so the weights are the popularity (¾ and ¼, but for the half-life).
  const double one = weight_of(1), eight = weight_of(8);
  EXPECT_NEAR(one, 0.75, 1e-3);
  EXPECT_NEAR(eight, 0.25, 1e-3);
  f.refresher->RefreshOnce();
  EXPECT_NEAR(weight_of(1), one / 2 / (one / 2 + eight), 1e-12);
  EXPECT_NEAR(weight_of(8), eight / (one / 2 + eight), 1e-12);
  EXPECT_NEAR(weight_of(8), 0.4, 1e-3);
}

// A node of 4 × 24 GiB GPUs, `free` of them nearly empty and the rest nearly full.
NodeMetrics NodeWithFreeGpus(int free) {
  NodeMetrics m = Node(0.05);
  for (int i = free; i < 4; ++i) m.gpus[i].memory_used = static_cast<Bytes>(0.95 * 24 * kGi);
  return m;
}

// The look-ahead in the filter: node two-free has two usable GPUs, one-free one.
// By load alone the 1-GPU pod first in the queue goes to two-free (the emptier);
// the 2-GPU pod queued after it then fits nowhere. Seeing it, the filter gives
// one-free the top priority instead, and the 2-GPU pod takes two-free.
TEST(Extender, LooksAheadAtTheNextPodInTheQueue) {
  auto pod = [](const std::string& name, int gpus, const std::string& created) {
    json p = {{"metadata",
               {{"name", name},
                {"namespace", "ml"},
                {"uid", "u-" + name},
                {"creationTimestamp", created},
                {"annotations", {{"ai.gpu-memory", "20Gi"}}}}},
              {"spec",
               {{"schedulerName", "load-aware-scheduler"},
                {"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
              {"status", {{"phase", "Pending"}}}};
    return p.dump();
  };
  const std::string small = pod("small", 1, "2026-12-06T10:00:00Z"),
                    pair = pod("pair", 2, "2026-12-06T10:00:01Z");
  const std::vector<std::string> nodes{"two-free", "one-free"};
  struct Case {
    std::string name;
    bool look_ahead;
    std::vector<std::string> queue;
    std::set<std::string> being_bound;
    std::string top;
    std::string outcome;                // the look_ahead counter that moves; empty: none
    bool next_filtered_before = false;  // kube-scheduler took it already
  };
  const Case cases[] = {
      {"looks_ahead", true, {small, pair}, {}, "one-free", "moved"},
      {"switched_off", false, {small, pair}, {}, "two-free", ""},
      {"next_pod_being_bound", true, {small, pair}, {"ml/pair"}, "two-free", "no_next"},
      {"nothing_queued_after", true, {small}, {}, "two-free", "no_next"},
      {"next_pod_fits_either_way",
       true,
       {small, pod("one", 1, "2026-12-06T10:00:02Z")},
       {},
       "two-free",
       "kept"},
      {"next_pod_filtered_already", true, {small, pair}, {}, "two-free", "no_next", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    f.config.look_ahead = c.look_ahead;
    f.source.snapshot.nodes = {{"two-free", NodeWithFreeGpus(2)},
                               {"one-free", NodeWithFreeGpus(1)}};
    f.ext = std::make_unique<Extender>(f.config, f.store, f.clock, f.log, &f.metrics);
    PendingPods pending(f.log);
    pending.Replace(c.queue);
    f.ext->SetPendingPods(&pending,
                          [&](const std::string& key) { return c.being_bound.count(key) > 0; });
    f.refresher->RefreshOnce();
    if (c.next_filtered_before) f.ext->Filter(NamesArgs(pair, {"two-free"}));
    const json filtered = json::parse(f.ext->Filter(NamesArgs(small, nodes)).body);
    ASSERT_EQ(Names(filtered["NodeNames"]), nodes) << filtered.dump();
    // The prioritize that follows (the filter's memo), and one decided afresh.
    const auto scores = Scores(f.ext->Prioritize(NamesArgs(small, nodes)).body);
    const std::string other = c.top == "two-free" ? "one-free" : "two-free";
    EXPECT_GT(scores.at(c.top), scores.at(other)) << c.top;
    const int decided = c.next_filtered_before ? 1 : 2;  // filter, and a fresh prioritize
    if (c.next_filtered_before) {
      EXPECT_EQ(f.metrics.look_ahead.With({"no_next"}).Get(), 1);
      continue;
    }
    f.ext = std::make_unique<Extender>(f.config, f.store, f.clock, f.log, &f.metrics);
    f.ext->SetPendingPods(&pending,
                          [&](const std::string& key) { return c.being_bound.count(key) > 0; });
    EXPECT_EQ(Scores(f.ext->Prioritize(NamesArgs(small, nodes)).body), scores);
    for (const char* outcome : {"moved", "kept", "no_next"})
      EXPECT_EQ(f.metrics.look_ahead.With({outcome}).Get(), outcome == c.outcome ? decided : 0)
          << outcome;
  }
}

// The default profile's fgd scores only once a bound GPU pod carries
// tidal.io/gpus-allocated (Tidal's device plugin gave it the GPUs named): the
// pod watch tells the extender, whose cycles then say the choice is carried out.
TEST(Extender, GpuChoicesAreCarriedOutOnceAPodCarriesTheDevicePluginsMark) {
  auto pod = [](const std::string& name, int gpus, const char* phase, bool marked) {
    json p = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "u-" + name}}},
              {"spec",
               {{"nodeName", "idle"},
                {"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
              {"status", {{"phase", phase}}}};
    p["metadata"]["annotations"]["tidal.io/gpus"] = "0";
    if (marked) p["metadata"]["annotations"]["tidal.io/gpus-allocated"] = "0";
    return p.dump();
  };
  struct Case {
    const char* name;
    std::string pod;
    bool carried_out;
  };
  const Case cases[] = {
      {"a GPU pod named GPUs but not given them", pod("named", 1, "Running", false), false},
      {"a finished pod that was given them", pod("done", 1, "Succeeded", true), false},
      {"a pod without GPUs carrying the mark", pod("cpu", 0, "Running", true), false},
      {"a running GPU pod given them", pod("given", 1, "Running", true), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    KubeSync sync(f.catalog, nullptr, f.log);
    sync.OnGpuChoiceCarriedOut([&f] { f.ext->NoteGpuChoiceCarriedOut(); });
    sync.pod_handler().Replace({c.pod});
    EXPECT_EQ(f.ext->learned_workload().GpuChoiceCarriedOut(), c.carried_out);
  }
}

TEST(Extender, NvlinkPodsFromThePodWatchOrderNodesWithoutTheAgent) {
  struct Case {
    const char* name;
    int busy_pods;  // NVLink pods on "busy" (4 GPUs × 2 slots); "quiet" has none
    bool busy_filtered;
    bool quiet_scores_higher;
    const char* reason;  // busy's, when filtered
  };
  const Case cases[] = {
      {"no NVLink pods on either: a tie", 0, false, false, nullptr},
      {"two on busy (0.25, under the warning): quiet first", 2, false, true, nullptr},
      {"three on busy (0.375, in the warning band): quiet first", 3, false, true, nullptr},
      {"five on busy (0.625, over the reject threshold): filtered", 5, true, true,
       "tidal: loadaware: NVLink"},
  };
  auto nvlink_pod = [](const std::string& name) {
    json p = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "u-" + name}}},
              {"spec",
               {{"nodeName", "busy"},
                {"containers",
                 {{{"name", "c"},
                   {"image", "nvcr.io/nvidia/pytorch:24.01"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}},
              {"status", {{"phase", "Running"}}}};
    return p.dump();
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    f.source.snapshot.nodes.clear();
    for (const char* n : {"busy", "quiet"}) {
      NodeMetrics m = Node(0.10);
      m.sources.nvlink = m.sources.competition = "none";  // dcgm-exporter, no agent
      f.source.snapshot.nodes[n] = m;
    }
    KubeSync sync(f.catalog, nullptr, f.log);
    std::vector<std::string> pods;
    for (int i = 0; i < c.busy_pods; ++i) pods.push_back(nvlink_pod("nv-" + std::to_string(i)));
    sync.pod_handler().Replace(pods);
    PodCompetitionSource source(f.source, f.config.nvlink.slots_per_gpu, /*prefer_pods=*/true);
    source.CountPodsWith([&sync] { return sync.NvlinkPods(); });
    Refresher refresher(source, f.store, f.catalog, f.clock, f.config.metric_cache_ttl_ms, f.log);
    refresher.RefreshOnce();

    const std::string pod = PodJson(2);  // a 2-GPU pytorch pod: uses NVLink
    const json filtered = json::parse(f.ext->Filter(NamesArgs(pod, {"busy", "quiet"})).body);
    if (c.busy_filtered) {
      EXPECT_EQ(Names(filtered["NodeNames"]), std::vector<std::string>{"quiet"});
      EXPECT_NE(filtered["FailedNodes"]["busy"].get<std::string>().find(c.reason),
                std::string::npos)
          << filtered.dump();
      continue;
    }
    EXPECT_EQ(Names(filtered["NodeNames"]), (std::vector<std::string>{"busy", "quiet"}));
    const auto scores = Scores(f.ext->Prioritize(NamesArgs(pod, {"busy", "quiet"})).body);
    if (c.quiet_scores_higher)
      EXPECT_GT(scores.at("quiet"), scores.at("busy"));
    else
      EXPECT_EQ(scores.at("quiet"), scores.at("busy"));
    const json dbg = json::parse(f.ext->DebugNodes());
    EXPECT_EQ(dbg["sources"]["busy"]["competition"], "pods");
  }
}

}  // namespace
}  // namespace tidal::extender

namespace tidal::extender {
namespace {

// A request split over threads (parallelism > 1, parts of kMinNodesPerPart nodes
// and more) answers byte for byte as one thread does: survivors, reasons and
// scores in request order, whichever thread wrote them.
TEST(Extender, ARequestSplitOverThreadsAnswersAsOneThreadDoes) {
  Fixture f;
  std::vector<std::string> names;
  for (int i = 0; i < 2100; ++i) {
    const std::string name = "gpu-node-" + std::to_string(i);
    names.push_back(name);
    if (i % 11 == 10) continue;  // no series: unknown
    f.source.snapshot.nodes[name] = Node(0.05 + (i % 20) * 0.05, i % 13 == 0 ? 90 : 5);
  }
  f.refresher->RefreshOnce();
  PolicyConfig least_loaded = f.config;
  least_loaded.when_all_rejected = WhenAllRejected::kLeastLoaded;
  std::vector<std::string> with_series;  // load-rejected everywhere with a low threshold
  for (std::size_t i = 0; i < names.size(); ++i)
    if (i % 11 != 10) with_series.push_back(names[i]);
  struct Case {
    const char* name;
    PolicyConfig config;
    std::string pod;
    bool nodes_mode;
    const std::vector<std::string>* candidates;
    int want_pass;  // -1: some
    bool all_unresolvable;
  };
  const Case cases[] = {
      {"1 GPU, names", f.config, PodJson(1, {{"ai.gpu-memory", "4Gi"}}), false, &names, -1, false},
      {"4 GPUs over NVLink, names", f.config, PodJson(4, {{"ai.gpu-memory", "20Gi"}}), false,
       &names, -1, false},
      {"malformed annotation: every node unresolvable", f.config,
       PodJson(1, {{"ai.gpu-reject-threshold", "high"}}), false, &names, 0, true},
      {"every node rejected, the least loaded kept", least_loaded,
       PodJson(1, {{"ai.gpu-memory", "4Gi"}, {"ai.gpu-reject-threshold", "0.01"}}), false,
       &with_series, 1, false},
      {"1 GPU, Nodes objects", f.config, PodJson(1, {{"ai.gpu-memory", "4Gi"}}), true, &names, -1,
       false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    Extender one(tc.config, f.store, f.clock, f.log, &f.metrics, 1);
    Extender three(tc.config, f.store, f.clock, f.log, &f.metrics, 3);
    const std::vector<std::string>& candidates = *tc.candidates;
    std::string args;
    if (tc.nodes_mode) {
      std::vector<std::pair<std::string, json>> nodes;
      for (const auto& n : candidates) nodes.push_back({n, json{{"zone", "a"}}});
      args = NodesArgs(tc.pod, nodes);
    } else {
      args = NamesArgs(tc.pod, candidates);
    }
    const Reply want = one.Filter(args);
    const Reply got = three.Filter(args);
    ASSERT_EQ(got.http_status, want.http_status);
    EXPECT_EQ(got.body, want.body);
    const json j = json::parse(want.body);
    const std::size_t answered =
        (tc.nodes_mode ? j["Nodes"]["items"].size() : j["NodeNames"].size()) +
        j["FailedNodes"].size() + j["FailedAndUnresolvableNodes"].size();
    EXPECT_EQ(answered, candidates.size()) << "every candidate is answered";
    // Each case reaches the path it is named for.
    const std::size_t passed = tc.nodes_mode ? j["Nodes"]["items"].size() : j["NodeNames"].size();
    EXPECT_EQ(passed > 0, tc.want_pass != 0);
    if (tc.want_pass > 0) {
      EXPECT_EQ(passed, static_cast<std::size_t>(tc.want_pass));
    }
    EXPECT_EQ(j["FailedAndUnresolvableNodes"].size() == candidates.size(), tc.all_unresolvable);
    EXPECT_EQ(j["FailedNodes"].empty(), tc.all_unresolvable);
    // Every rejection carries its reason, whichever path wrote it.
    for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
      for (const auto& [node, reason] : j[key].items()) {
        const std::string text = reason.get<std::string>();
        EXPECT_EQ(text.rfind("tidal: ", 0), 0u) << node << ": " << text;
        EXPECT_GT(text.size(), 20u) << node << ": " << text;
      }
    }
    // Prioritize after the filter (the memo) and without one (another pod's
    // filter came between: every node evaluated again, in parts).
    EXPECT_EQ(three.Prioritize(args).body, one.Prioritize(args).body);
    const std::string other = NamesArgs(PodJson(2), {"gpu-node-1"});
    one.Filter(other);
    three.Filter(other);
    EXPECT_EQ(three.Prioritize(args).body, one.Prioritize(args).body);
  }
}

// kube-scheduler sends prioritize the filter's Pod and survivors as the filter
// answered them; that request is matched whole. Anything else is decoded and its
// names matched one by one, and every way gives the answer of a prioritize with
// no filter before it.
TEST(Extender, PrioritizeReusesTheFilterAnswerSentBackAsItWas) {
  Fixture f;
  f.refresher->RefreshOnce();
  const std::vector<std::string> all{"idle", "warm", "full", "slow-disk", "no-series"};
  const std::string pod = PodJson(1, {{"ai.gpu-memory", "4Gi"}});
  const auto body = [&](const std::string& names_json) {
    return R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":)" + names_json + "}";
  };
  const auto reused = [&](const char* how) { return f.metrics.prioritize_reuse.With({how}).Get(); };
  const struct {
    const char* name;
    std::string prioritize;
    const char* reuse;  // answer, verdicts or none
    int http_status;
  } cases[] = {
      {"the filter's NodeNames as answered", body(R"(["idle","warm","no-series"])"), "answer", 200},
      {"the same with a newline after it", body(R"(["idle","warm","no-series"])") + "\n", "answer",
       200},
      {"the same with a byte more", body(R"(["idle","warm","no-series"])") + "x", "", 400},
      {"Nodes left out", R"({"Pod":)" + pod + R"(,"NodeNames":["idle","warm","no-series"]})",
       "verdicts", 200},
      {"the same names, spaced", body(R"([ "idle", "warm",  "no-series" ] )"), "verdicts", 200},
      {"a subset (another extender filtered)", body(R"(["idle","no-series"])"), "verdicts", 200},
      {"a node the filter rejected", body(R"(["idle","full"])"), "none", 200},
      {"escaped names that read the same", body(R"(["\u0069dle","warm","no-series"])"), "verdicts",
       200},
      {"not a list of names", body(R"(["idle",7,"no-series"])"), "", 400},
      {"another pod", R"({"Pod":)" + PodJson(2) + R"(,"NodeNames":["idle","warm","no-series"]})",
       "none", 200},
  };
  f.log->set_level(spdlog::level::debug);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json filtered = json::parse(f.ext->Filter(NamesArgs(pod, all)).body);
    ASSERT_EQ(filtered["NodeNames"].dump(), R"(["idle","warm","no-series"])");
    const double before[] = {reused("answer"), reused("verdicts"), reused("none")};
    f.logs.str("");
    const Reply got = f.ext->Prioritize(c.prioritize);
    ASSERT_EQ(got.http_status, c.http_status) << got.body;
    // One debug line per decision, saying what it reused.
    const std::map<std::string, std::string> said = {
        {"answer", "prioritize ml/train-1: 3 nodes, 3 feasible, the filter's answer reused"},
        {"verdicts", "feasible, the filter's verdicts reused"},
        {"none", " unknown, stage 0"}};
    if (c.http_status == 200) {
      EXPECT_NE(f.logs.str().find(said.at(c.reuse)), std::string::npos) << f.logs.str();
    }
    const double after[] = {reused("answer"), reused("verdicts"), reused("none")};
    const char* hows[] = {"answer", "verdicts", "none"};
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(after[k] - before[k], std::string(c.reuse) == hows[k] ? 1 : 0) << hows[k];
    if (c.http_status != 200) continue;
    // The same request to an extender that has seen no filter.
    Extender fresh(f.config, f.store, f.clock, f.log, &f.metrics, 1);
    EXPECT_EQ(got.body, fresh.Prioritize(c.prioritize).body);
  }
}

}  // namespace
}  // namespace tidal::extender
