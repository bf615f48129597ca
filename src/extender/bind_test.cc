// /bind end to end without kube-scheduler: the verbs in the order it calls
// them, the reservations, and the API calls against a local HTTPS stand-in of
// the API server (tests/testing/fake_apiserver.h).
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/fake_apiserver.h"
#include "tidal/extender/binder.h"
#include "tidal/extender/kube_sync.h"
#include "tidal/extender/refresher.h"
#include "tidal/kube/informer.h"

namespace tidal::extender {
namespace {

using nlohmann::json;
constexpr Bytes kGi = Bytes{1} << 30;

class FixedSource final : public MetricsSource {
 public:
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override {
    *out = snapshot;
    out->fetched_at_ms = now_ms;
    for (auto& [name, m] : out->nodes) m.sample_time_ms = sample_time_ms;
    if (hold) hold();  // a Prometheus that does not answer yet
    return Status::Ok();
  }
  std::function<void()> hold;
  std::string Describe() const override { return "fixed"; }
  MetricsSnapshot snapshot;
  TimeMs sample_time_ms = 0;
};

NodeMetrics Node(double used_fraction) {
  NodeMetrics m;
  for (int i = 0; i < 4; ++i) {
    Gpu g;
    g.index = i;
    g.memory_total = 24 * kGi;
    g.memory_used = static_cast<Bytes>(used_fraction * 24 * kGi);
    m.gpus.push_back(g);
  }
  return m;
}

struct BindFixture {
  explicit BindFixture(bool reservations) {
    clock.Set(1'000'000);
    source.sample_time_ms = clock.NowMs() - 2'000;
    source.snapshot.nodes = {
        {"a", Node(0.05)}, {"b", Node(0.30)}, {"c", Node(0.30)}, {"d", Node(0.30)}};
    ext = std::make_unique<Extender>(config, store, clock, log, &metrics);
    refresher =
        std::make_unique<Refresher>(source, store, catalog, clock, config.metric_cache_ttl_ms, log);
    refresher->AttachReservations(&inflight);
    refresher->RefreshOnce();
    std::string error;
    kube::Endpoint e = *kube::ParseServerUrl(api.url(), &error);
    e.ca_pem = pki.ca_pem;
    e.token = "secret";
    client = std::make_unique<kube::KubeClient>(e);
    BinderOptions bo;
    bo.reservations = reservations;
    bo.first_backoff_ms = 1;
    binder = std::make_unique<Binder>(
        *ext, *client, &inflight, [this] { refresher->PublishReservations(); }, clock,
        [this](TimeMs ms) { slept_ms += ms; }, log, &metrics, bo);
  }

  // What kube-scheduler does for one pod: filter, prioritize the survivors, take
  // the highest score (the first on ties), bind. Returns the node, or "".
  std::string Schedule(const json& pod, std::string* bind_error = nullptr) {
    const std::vector<std::string> names{"a", "b", "c", "d"};
    const std::string args =
        R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":)" + json(names).dump() + "}";
    const json filtered = json::parse(ext->Filter(args).body);
    std::vector<std::string> survivors;
    for (const auto& n : filtered["NodeNames"]) survivors.push_back(n);
    if (survivors.empty()) return "";
    const std::string pargs =
        R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":)" + json(survivors).dump() + "}";
    std::string best;
    int best_score = -1;
    for (const auto& hp : json::parse(ext->Prioritize(pargs).body)) {
      if (hp["Score"].get<int>() > best_score) {
        best_score = hp["Score"];
        best = hp["Host"];
      }
    }
    const json binding{{"PodName", pod["metadata"]["name"]},
                       {"PodNamespace", pod["metadata"]["namespace"]},
                       {"PodUID", pod["metadata"]["uid"]},
                       {"Node", best}};
    const json result = json::parse(binder->Bind(binding.dump()).body);
    if (bind_error) *bind_error = result["Error"];
    return result["Error"] == "" ? best : "";
  }

  testing::TempDir dir;
  testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api{pki, "secret"};
  ManualClock clock;
  PolicyConfig config = DefaultPolicyConfig();
  FixedSource source;
  ViewStore store;
  NodeCatalog catalog;
  ExtenderMetrics metrics;
  InFlight inflight{ReservationOptions{}, 2};
  std::shared_ptr<spdlog::logger> log =
      std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  std::unique_ptr<Extender> ext;
  std::unique_ptr<Refresher> refresher;
  std::unique_ptr<kube::KubeClient> client;
  std::unique_ptr<Binder> binder;
  TimeMs slept_ms = 0;
};

json BurstPod(int i) {
  return testing::TestPod("ml", "burst-" + std::to_string(i), 1, "", "Pending",
                          {{"ai.gpu-memory", "16Gi"}});
}

TEST(Bind, ReservationsStopABurstFromOvercommittingTheIdleNode) {
  struct Case {
    std::string name;
    bool reservations;
  };
  for (const Case& c : {Case{"reservations off", false}, Case{"reservations on", true}}) {
    SCOPED_TRACE(c.name);
    BindFixture f(c.reservations);
    std::map<std::string, int> per_node;
    for (int i = 0; i < 8; ++i) {
      f.api.PutPod(BurstPod(i));
      const std::string node = f.Schedule(BurstPod(i));
      ASSERT_FALSE(node.empty()) << "pod " << i;
      ++per_node[node];
    }
    // What each GPU was promised, from the tidal.io/gpus annotations the binds wrote,
    // on top of what the (unchanged) metrics measured.
    std::map<std::pair<std::string, int>, Bytes> used;
    for (const auto& [name, m] : f.source.snapshot.nodes)
      for (const auto& g : m.gpus) used[{name, g.index}] = g.memory_used;
    for (int i = 0; i < 8; ++i) {
      const json pod = f.api.pod("ml", "burst-" + std::to_string(i));
      const std::string gpus = pod["metadata"]["annotations"]["tidal.io/gpus"];
      used[{pod["spec"]["nodeName"], std::stoi(gpus)}] += 16 * kGi;
    }
    Bytes worst = 0;
    for (const auto& [gpu, bytes] : used) worst = std::max(worst, bytes);
    if (!c.reservations) {
      // The herd: with no new sample every pod sees "a" as idle as before, and
      // its GPU 0 is promised 8 × 16 GiB.
      EXPECT_EQ(per_node["a"], 8) << json(per_node).dump();
      EXPECT_GT(worst, 24 * kGi);
      EXPECT_EQ(f.inflight.size(), 0u);
    } else {
      // Each reservation takes a GPU's free memory: no GPU is promised more than
      // it has, and the burst spreads as "a" fills (5 % + 67 % on each GPU).
      EXPECT_LE(worst, 24 * kGi);
      EXPECT_EQ(per_node["a"], 4) << json(per_node).dump();
      EXPECT_GE(per_node.size(), 3u) << json(per_node).dump();
      EXPECT_EQ(f.inflight.in_flight(), 8u);
    }
  }
}

// Bind publishes its reservation through Republish; a fetch that hangs (up to
// queryTimeout) must not hold that up, or every bind would wait on Prometheus.
TEST(Bind, AReservationIsPublishedWhileAFetchHangs) {
  BindFixture f(true);
  std::promise<void> fetching, release;
  std::shared_future<void> released = release.get_future().share();
  f.source.hold = [&] {
    fetching.set_value();
    released.wait();
  };
  std::thread refresh([&] { f.refresher->RefreshOnce(); });
  fetching.get_future().wait();
  f.api.PutPod(BurstPod(0));
  auto scheduled = std::async(std::launch::async, [&] { return f.Schedule(BurstPod(0)); });
  // A liveness guard, not a timing assertion: with the old single lock this never returns.
  const bool done = scheduled.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  EXPECT_TRUE(done) << "bind waited on the hanging fetch";
  if (done) {
    EXPECT_EQ(scheduled.get(), "a");
    EXPECT_EQ(f.store.Load()->reservations_generation, f.inflight.generation());
    EXPECT_EQ(f.inflight.in_flight(), 1u);
  }
  release.set_value();
  refresh.join();
  // The fetch that finished after the bind keeps the reservation in its view.
  EXPECT_EQ(f.store.Load()->reservations_generation, f.inflight.generation());
  f.source.hold = nullptr;
}

TEST(Bind, CreatesTheBindingCarryingTheGpuAnnotation) {
  BindFixture f(true);
  f.api.PutPod(BurstPod(0));
  ASSERT_EQ(f.Schedule(BurstPod(0)), "a");
  const json pod = f.api.pod("ml", "burst-0");
  EXPECT_EQ(pod["spec"]["nodeName"], "a");
  EXPECT_EQ(pod["metadata"]["annotations"]["tidal.io/gpus"], "0");
  std::vector<testing::FakeApiServer::Recorded> calls;
  for (const auto& r : f.api.requests())
    if (r.method != "GET") calls.push_back(r);
  // One write: the Binding carries the annotation (no patch before it).
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, "POST");
  EXPECT_EQ(calls[0].path, "/api/v1/namespaces/ml/pods/burst-0/binding");
  EXPECT_EQ(calls[0].authorization, "Bearer secret");
  EXPECT_EQ(json::parse(calls[0].body), json::parse(R"({"apiVersion":"v1","kind":"Binding",
                "metadata":{"name":"burst-0","namespace":"ml","uid":"uid-burst-0",
                            "annotations":{"tidal.io/gpus":"0"}},
                "target":{"apiVersion":"v1","kind":"Node","name":"a"}})"));
}

TEST(Bind, RetriesConflictsAndServerErrorsThenGivesUp) {
  struct Case {
    std::string name;
    int failures, status;
    bool bound;
  };
  const std::vector<Case> cases = {
      {"two 500s then bound", 2, 500, true},
      {"one 409 then bound", 1, 409, true},
      {"409 every time", 10, 409, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    BindFixture f(true);
    f.api.PutPod(BurstPod(0));
    f.api.FailNextBindings(c.failures, c.status);
    std::string error;
    const std::string node = f.Schedule(BurstPod(0), &error);
    EXPECT_EQ(!node.empty(), c.bound) << error;
    if (c.bound) {
      EXPECT_EQ(f.inflight.size(), 1u);
      EXPECT_EQ(f.slept_ms, c.failures == 2 ? 1 + 2 : 1);  // doubling backoff
    } else {
      // kube-scheduler retries the pod: nothing may stay reserved for it.
      EXPECT_NE(error.find("binding to a: HTTP 409: scripted failure"), std::string::npos) << error;
      EXPECT_EQ(f.inflight.size(), 0u);
      const auto view = f.store.Load();
      EXPECT_EQ(view->Find("a"), &view->nodes->at("a"));
      EXPECT_EQ(f.api.pod("ml", "burst-0")["spec"].value("nodeName", ""), "");
    }
  }
}

TEST(Bind, ALostAnswerFollowedByConflictIsBound) {
  BindFixture f(true);
  f.api.PutPod(BurstPod(0));
  f.api.LoseNextBindingAnswers(1);  // bound, answered 500; the retry gets 409
  std::string error;
  EXPECT_EQ(f.Schedule(BurstPod(0), &error), "a") << error;
  EXPECT_EQ(f.inflight.size(), 1u);
}

TEST(Bind, FailsClearlyWithoutPlacingWhatItCannot) {
  BindFixture f(true);
  // Never filtered: no pod spec to place GPUs from.
  json r = json::parse(
      f.binder->Bind(R"({"PodName":"x","PodNamespace":"ml","PodUID":"u","Node":"a"})").body);
  EXPECT_NE(r["Error"].get<std::string>().find("ml/x: not seen in a filter request"),
            std::string::npos)
      << r.dump();
  r = json::parse(f.binder->Bind("{").body);
  EXPECT_NE(r["Error"].get<std::string>().find("tidal:"), std::string::npos);
  // The pod is gone from the API server: the binding fails, nothing stays reserved.
  std::string error;
  EXPECT_EQ(f.Schedule(BurstPod(5), &error), "");
  EXPECT_NE(error.find("not found"), std::string::npos) << error;
  EXPECT_EQ(f.inflight.size(), 0u);
}

// kube-scheduler binds only to a node that passed every filter: a bind naming
// another one is not its choice (a confused or hostile caller), and must not
// reach the API server with our token, even where the node would fit by now.
TEST(Bind, BindsOnlyToANodeTheLastFilterPassed) {
  struct Case {
    std::string name;
    std::string node;
    bool bound;
  };
  const std::vector<Case> cases = {
      {"rejected by the filter, cool by the time of the bind", "b", false},
      {"in the view but not in the filter request", "e", false},
      {"no such node", "nowhere", false},
      {"passed by the filter", "a", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BindFixture f(true);
    f.source.snapshot.nodes["b"] = Node(0.95);
    f.source.snapshot.nodes["e"] = Node(0.0);  // idle, never asked about
    f.refresher->RefreshOnce();
    const json pod = BurstPod(0);
    f.api.PutPod(pod);
    const json filtered = json::parse(
        f.ext->Filter(R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":["a","b","c","d"]})")
            .body);
    ASSERT_TRUE(filtered["FailedNodes"].contains("b")) << filtered.dump();
    ASSERT_NE(std::find(filtered["NodeNames"].begin(), filtered["NodeNames"].end(), "a"),
              filtered["NodeNames"].end())
        << filtered.dump();
    // The view changes after the filter: "b" would now fit, were it asked about again.
    f.source.snapshot.nodes["b"] = Node(0.0);
    f.refresher->RefreshOnce();

    const json binding{{"PodName", "burst-0"},
                       {"PodNamespace", "ml"},
                       {"PodUID", "uid-burst-0"},
                       {"Node", c.node}};
    const std::string error = json::parse(f.binder->Bind(binding.dump()).body)["Error"];
    int posts = 0;
    for (const auto& r : f.api.requests()) posts += r.method == "POST" ? 1 : 0;
    if (c.bound) {
      EXPECT_EQ(error, "");
      EXPECT_EQ(posts, 1);
      EXPECT_EQ(f.api.pod("ml", "burst-0")["spec"]["nodeName"], c.node);
      EXPECT_EQ(f.metrics.binds.With({"bound"}).Get(), 1);
      EXPECT_EQ(f.metrics.binds.With({"not_offered"}).Get(), 0);
    } else {
      EXPECT_NE(error.find("tidal: ml/burst-0 on " + c.node + ": not among the "),
                std::string::npos)
          << error;
      EXPECT_NE(error.find("nodes its last filter passed"), std::string::npos) << error;
      EXPECT_EQ(posts, 0) << "a Binding was attempted";
      EXPECT_EQ(f.api.pod("ml", "burst-0")["spec"].value("nodeName", ""), "");
      EXPECT_EQ(f.inflight.size(), 0u) << "nothing is reserved for a refused bind";
      EXPECT_EQ(f.metrics.binds.With({"not_offered"}).Get(), 1);
      EXPECT_EQ(f.metrics.binds.With({"bound"}).Get(), 0);
    }
  }
}

// A pod the filter gave no node (its own demand unresolvable) is bound nowhere.
TEST(Bind, APodTheFilterPassedNowhereIsBoundNowhere) {
  BindFixture f(true);
  const json pod = testing::TestPod("ml", "huge", 1, "", "Pending", {{"ai.gpu-memory", "1Ti"}});
  f.api.PutPod(pod);
  const json filtered = json::parse(
      f.ext->Filter(R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":["a","b"]})").body);
  ASSERT_TRUE(filtered["NodeNames"].empty()) << filtered.dump();
  const std::string error = json::parse(f.binder
                                            ->Bind(R"({"PodName":"huge","PodNamespace":"ml",)"
                                                   R"("PodUID":"uid-huge","Node":"a"})")
                                            .body)["Error"];
  EXPECT_NE(error.find("not among the 0 nodes its last filter passed"), std::string::npos) << error;
  for (const auto& r : f.api.requests()) EXPECT_NE(r.method, "POST") << r.path;
}

// A node advertises nvidia.com/gpu as GPUs × replicas; each GPU can be given to
// that many pods, whatever its free memory. A burst of small pods on the one cool
// node fills every GPU's slots, and no more.
TEST(Bind, ABurstGetsNoGpuMoreOftenThanItHasDeviceSlots) {
  struct Case {
    std::string name;
    int allocatable;  // on node a, which has 4 GPUs
    int slots_per_gpu;
  };
  const std::vector<Case> cases = {
      {"one slot per GPU", 4, 1},
      {"time-sliced 2 ways", 8, 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    BindFixture f(true);
    for (const char* hot : {"b", "c", "d"}) f.source.snapshot.nodes[hot] = Node(0.95);
    NodeInfo info;
    info.allocatable_gpus = c.allocatable;
    f.catalog.Put("a", info);
    f.refresher->RefreshOnce();
    std::map<std::string, int> pods_by_gpus;
    for (int i = 0; i < c.allocatable + 2; ++i) {
      json pod = testing::TestPod("ml", "small-" + std::to_string(i), 1, "", "Pending",
                                  {{"ai.gpu-memory", "1Gi"}});
      f.api.PutPod(pod);
      const std::string node = f.Schedule(pod);
      if (i >= c.allocatable) {
        EXPECT_EQ(node, "") << "pod " << i << " bound with every slot taken";
        continue;
      }
      ASSERT_EQ(node, "a") << "pod " << i;
      const std::string gpus =
          f.api.pod("ml", "small-" + std::to_string(i))["metadata"]["annotations"]["tidal.io/gpus"];
      EXPECT_LT(pods_by_gpus[gpus]++, c.slots_per_gpu) << "GPU " << gpus << " promised twice";
    }
    EXPECT_EQ(pods_by_gpus.size(), 4u);
    for (const auto& [g, n] : pods_by_gpus) EXPECT_EQ(n, c.slots_per_gpu) << "GPU " << g;
  }
}

TEST(Bind, ReservationsEndWhenASampleShowsThePod) {
  BindFixture f(true);
  for (int i = 0; i < 2; ++i) {
    f.api.PutPod(BurstPod(i));
    ASSERT_FALSE(f.Schedule(BurstPod(i)).empty());
  }
  ASSERT_EQ(f.inflight.in_flight(), 2u);
  // A sample taken before bind + visibleAfter does not show them.
  f.clock.Advance(10'000);
  f.source.sample_time_ms = f.clock.NowMs();
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.inflight.in_flight(), 2u);
  // One taken 15 s after the binds does: no longer in flight (claims remain).
  f.clock.Advance(10'000);
  f.source.sample_time_ms = f.clock.NowMs();
  f.refresher->RefreshOnce();
  EXPECT_EQ(f.inflight.in_flight(), 0u);
  EXPECT_EQ(f.inflight.size(), 2u);
}

TEST(KubeSyncTest, WatchedPodsCountGpusAndEndReservations) {
  BindFixture f(true);
  KubeSync sync(f.catalog, &f.inflight, f.log);
  f.api.PutNode(testing::TestNode("a", 4, {{"tidal.io/pool", "golden"}}));
  f.api.PutNode(testing::TestNode("b", 4));
  f.api.PutPod(testing::TestPod("ml", "other-binder", 2, "b", "Running"));
  kube::InformerOptions o;
  o.backoff_initial_ms = 20;
  kube::Informer nodes(*f.client, "/api/v1/nodes", sync.node_handler(), f.log, o);
  o.field_selector = "spec.nodeName!=";
  kube::Informer pods(*f.client, "/api/v1/pods", sync.pod_handler(), f.log, o);
  nodes.Start();
  pods.Start();
  ASSERT_TRUE(testing::Eventually([&] { return nodes.synced() && pods.synced(); }));
  auto info = [&](const std::string& n) { return f.catalog.Copy()[n]; };
  EXPECT_EQ(info("a").labels.at("tidal.io/pool"), "golden");
  EXPECT_EQ(info("b").gpus_requested, 2);

  // Our bind: reserved, then the watch shows it bound (counted by the API from then on).
  f.api.PutPod(BurstPod(0));
  ASSERT_EQ(f.Schedule(BurstPod(0)), "a");
  ASSERT_TRUE(testing::Eventually([&] { return info("a").gpus_requested == 1; }));
  f.refresher->Republish();
  EXPECT_EQ(f.store.Load()->Find("a")->gpus_requested, 1);  // not 2: counted once

  // The pod finishes: its reservation ends and its GPU is free again.
  f.api.PutPod(testing::TestPod("ml", "burst-0", 1, "a", "Succeeded"));
  ASSERT_TRUE(testing::Eventually([&] { return f.inflight.size() == 0; }));
  ASSERT_TRUE(testing::Eventually([&] { return info("a").gpus_requested == 0; }));
  f.api.DeletePod("ml", "other-binder");
  ASSERT_TRUE(testing::Eventually([&] { return info("b").gpus_requested == 0; }));
  EXPECT_EQ(sync.decode_errors(), 0u);
  nodes.Stop();
  pods.Stop();
}

std::shared_ptr<spdlog::logger> NullLog() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

TEST(KubeSyncTest, CountsNvlinkPodsPerNodeByThePolicysRule) {
  // Each case is one pod on node "a", listed, then deleted by a watch event.
  auto pod = [](int gpus, const std::string& phase, json annotations = json::object()) {
    return testing::TestPod("ml", "p", gpus, "a", phase, std::move(annotations));
  };
  auto image = [](json p, const std::string& name) {
    p["spec"]["containers"][0]["image"] = name;
    return p;
  };
  auto deleting = [](json p) {
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
    return p;
  };
  struct Case {
    const char* name;
    json pod;
    int want;  // NVLink pods counted on "a"
  };
  const Case cases[] = {
      {"two GPUs of a pytorch image", pod(2, "Running"), 1},
      {"bound, not running yet: counted from the bind on", pod(2, "Pending"), 1},
      {"one GPU has no peer to talk to over NVLink", pod(1, "Running"), 0},
      {"one GPU with ai.nvlink-required", pod(1, "Running", {{"ai.nvlink-required", "true"}}), 1},
      {"two GPUs of another image", image(pod(2, "Running"), "vllm/vllm-openai:v0.4"), 0},
      {"two GPUs of another image with ai.auto-nvlink",
       image(pod(2, "Running", {{"ai.auto-nvlink", "true"}}), "vllm/vllm-openai:v0.4"), 1},
      {"finished", pod(2, "Succeeded"), 0},
      {"failed", pod(2, "Failed"), 0},
      {"being deleted", deleting(pod(2, "Running")), 0},
      {"no GPUs, even with ai.nvlink-required", pod(0, "Running", {{"ai.nvlink-required", "true"}}),
       0},
  };
  auto count = [](const std::optional<NvlinkPodCounts>& c, const std::string& node) {
    if (!c) return -1;
    const auto it = c->find(node);
    return it == c->end() ? 0 : it->second;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeCatalog catalog;
    KubeSync sync(catalog, nullptr, NullLog());
    EXPECT_EQ(sync.NvlinkPods(), std::nullopt) << "nothing is known before the first list";
    sync.pod_handler().Replace({c.pod.dump()});
    EXPECT_EQ(count(sync.NvlinkPods(), "a"), c.want);
    sync.pod_handler().Apply({kube::WatchEvent::Type::kDeleted, c.pod.dump(), ""});
    EXPECT_EQ(count(sync.NvlinkPods(), "a"), 0);
    EXPECT_TRUE(sync.NvlinkPods()->empty()) << "nodes without NVLink pods are dropped";
  }
}

TEST(KubeSyncTest, NvlinkPodCountsFollowTheWatch) {
  NodeCatalog catalog;
  NvlinkDetection detection;
  detection.image_patterns = {"megatron"};  // the policy's rule, not the agent's default
  KubeSync sync(catalog, nullptr, NullLog(), nullptr, detection);
  auto pod = [](const std::string& name, const std::string& node, const std::string& image,
                const std::string& phase = "Running") {
    json p = testing::TestPod("ml", name, 4, node, phase);
    p["spec"]["containers"][0]["image"] = image;
    return p.dump();
  };
  using T = kube::WatchEvent::Type;
  sync.pod_handler().Replace({pod("m1", "a", "nvcr.io/megatron:1"), pod("m2", "a", "megatron"),
                              pod("t1", "b", "pytorch/pytorch:2.1"), pod("m3", "b", "megatron")});
  EXPECT_EQ(*sync.NvlinkPods(), (NvlinkPodCounts{{"a", 2}, {"b", 1}}));
  sync.pod_handler().Apply({T::kModified, pod("m1", "a", "megatron", "Succeeded"), ""});
  EXPECT_EQ(*sync.NvlinkPods(), (NvlinkPodCounts{{"a", 1}, {"b", 1}}));
  sync.pod_handler().Apply({T::kAdded, pod("m4", "c", "megatron", "Pending"), ""});
  sync.pod_handler().Apply({T::kDeleted, pod("m3", "b", "megatron"), ""});
  EXPECT_EQ(*sync.NvlinkPods(), (NvlinkPodCounts{{"a", 1}, {"c", 1}}));
  // A relist (the watch was down) replaces the counts.
  sync.pod_handler().Replace({pod("m5", "b", "megatron")});
  EXPECT_EQ(*sync.NvlinkPods(), (NvlinkPodCounts{{"b", 1}}));
  EXPECT_EQ(sync.decode_errors(), 0u);
}

}  // namespace
}  // namespace tidal::extender
