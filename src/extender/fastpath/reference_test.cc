// The reference path: the extender's verbs the plain way, one thread, the
// request decoded to a DOM (nlohmann::json), every node looked up in the view's
// maps, all of them evaluated in one call, the answer built as a DOM. It is the
// oracle for everything in fastpath/ and for wire.cc's decoding and encoding:
// requests of every shape, decided by the extender with one thread and with
// three, answer what the reference answers.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tidal/extender/extender.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/kubetypes/quantity.h"
#include "tidal/policy/extender_score.h"
#include "tidal/policy/fallback.h"

namespace tidal::extender {
namespace {

using nlohmann::json;
constexpr Bytes kGi = Bytes{1} << 30;

// ---- The reference ----

std::string SpelledOut(std::string text) {
  std::string out;
  for (const char c : text) out += c == '%' ? std::string(" percent") : std::string(1, c);
  return out;
}

struct Candidate {
  std::string name;
  const json* object = nullptr;  // Nodes mode: the Node as sent
};

// The node the policy sees for a candidate: the view's (recent and reserved
// first), overlaid with the Node object sent, unknown without fresh metrics.
NodeState Resolve(const ClusterView& view, const Candidate& c, TimeMs now, TimeMs stale_after) {
  const NodeState* known = view.FindInMaps(c.name);
  NodeState node = known ? *known : NodeState{};
  node.name = c.name;
  if (c.object) {
    const json& meta = c.object->at("metadata");
    node.labels.clear();
    if (meta.contains("labels"))
      for (const auto& [k, v] : meta["labels"].items()) node.labels[k] = v.get<std::string>();
    const json& alloc = c.object->at("status").at("allocatable");
    std::string error;
    if (alloc.contains("nvidia.com/gpu"))
      node.allocatable_gpus =
          static_cast<int>(*ParseQuantity(alloc["nvidia.com/gpu"].get<std::string>(), "", &error));
    node.cpu_milli_allocatable = *ParseQuantityMilli(alloc["cpu"].get<std::string>(), "", &error);
    node.memory_allocatable = *ParseQuantity(alloc["memory"].get<std::string>(), "", &error);
  }
  const bool fresh = known && known->metrics_known && now - known->sample_time_ms <= stale_after;
  if (!fresh) {
    node.metrics_known = false;
    node.gpus.clear();
    node.storage_await_ms = 0;
    node.nvlink_competition = 0;
    node.Finalize();
  }
  return node;
}

class Reference {
 public:
  explicit Reference(const PolicyConfig& config) : config_(config) {
    runners_.push_back(std::make_unique<Runner>(config));
    runners_.push_back(std::make_unique<Runner>(MakeFallbackRunner(config, 1)));
    runners_.push_back(std::make_unique<Runner>(MakeFallbackRunner(config, 2)));
    for (auto& r : runners_) r->SetLearnedWorkload(&workload_);
  }

  json Filter(const std::string& body, const ClusterView& view, TimeMs now, int stage) const {
    Decided d = Decide(body, view, now, stage, /*learn=*/true);
    json answer = {{"Nodes", nullptr},
                   {"NodeNames", nullptr},
                   {"FailedNodes", json::object()},
                   {"FailedAndUnresolvableNodes", json::object()},
                   {"Error", ""}};
    json items = json::array(), names = json::array();
    const auto pass = [&](std::size_t i) {
      if (d.candidates[i].object) items.push_back(*d.candidates[i].object);
      names.push_back(d.candidates[i].name);
    };
    const Status& pod_status = d.eval.pod_status;
    std::size_t least_loaded = d.candidates.size();
    for (std::size_t i = 0; i < d.candidates.size(); ++i) {
      const NodeResult& r = d.eval.nodes[i];
      const Status& why = pod_status.ok() ? r.status : pod_status;
      if (pod_status.ok() && r.feasible()) {
        pass(i);
        continue;
      }
      // A pod no node can take makes every node unresolvable, whatever its code.
      const bool unresolvable = !pod_status.ok() || why.code() == Code::kUnresolvable;
      answer[unresolvable ? "FailedAndUnresolvableNodes" : "FailedNodes"][d.candidates[i].name] =
          SpelledOut("tidal: " + why.reason());
      if (pod_status.ok() && why.code() == Code::kUnfit && d.nodes[i].metrics_known &&
          (least_loaded == d.candidates.size() ||
           d.nodes[i].load.gpu_memory < d.nodes[least_loaded].load.gpu_memory))
        least_loaded = i;
    }
    if (names.empty() && pod_status.ok() &&
        config_.when_all_rejected == WhenAllRejected::kLeastLoaded &&
        least_loaded != d.candidates.size()) {
      answer["FailedNodes"].erase(d.candidates[least_loaded].name);
      pass(least_loaded);
    }
    if (d.has_nodes) answer["Nodes"] = {{"metadata", json::object()}, {"items", items}};
    if (d.has_node_names || !d.has_nodes) answer["NodeNames"] = names;
    return answer;
  }

  json Prioritize(const std::string& body, const ClusterView& view, TimeMs now, int stage) const {
    const Decided d = Decide(body, view, now, stage);
    json answer = json::array();
    for (std::size_t i = 0; i < d.candidates.size(); ++i) {
      const NodeResult& r = d.eval.nodes[i];
      const bool ok = d.eval.pod_status.ok() && r.feasible();
      answer.push_back(
          {{"Host", d.candidates[i].name}, {"Score", ok ? ToExtenderPriority(r.score) : 0}});
    }
    return answer;
  }

 private:
  struct Decided {
    json request;
    bool has_nodes = false, has_node_names = false;
    std::vector<Candidate> candidates;
    std::vector<NodeState> nodes;
    Evaluation eval;
  };

  Decided Decide(const std::string& body, const ClusterView& view, TimeMs now, int stage,
                 bool learn = false) const {
    Decided d;
    d.request = json::parse(body);
    RawPod raw;
    EXPECT_TRUE(DecodePodJson(d.request["Pod"].dump(), &raw).ok());
    const PodDemand pod = ToPodDemand(raw);
    // A filter's GPU pod is learned once (fgd's `tasks: learned`), as the extender does.
    if (learn && pod.gpu_count > 0 && pod.invalid_reason.empty() &&
        learned_.insert(pod.uid.empty() ? pod.Key() : pod.uid).second)
      workload_.Observe(pod);
    d.has_nodes = d.request.contains("Nodes") && !d.request["Nodes"].is_null();
    d.has_node_names = d.request.contains("NodeNames") && !d.request["NodeNames"].is_null();
    if (d.has_nodes) {
      for (const json& item : d.request["Nodes"]["items"])
        d.candidates.push_back({item["metadata"]["name"].get<std::string>(), &item});
    } else if (d.has_node_names) {
      for (const json& name : d.request["NodeNames"]) d.candidates.push_back({name, nullptr});
    }
    for (const Candidate& c : d.candidates)
      d.nodes.push_back(Resolve(view, c, now, config_.metrics_stale_after_ms));
    std::vector<const NodeState*> pointers;
    for (const NodeState& n : d.nodes) pointers.push_back(&n);
    runners_[stage]->Evaluate(pod, pointers, RunOptions{false, false}, &d.eval);
    return d;
  }

  PolicyConfig config_;
  std::vector<std::unique_ptr<Runner>> runners_;
  // The GPU workload learned from the filters seen, each pod once (by UID).
  mutable WorkloadLearner workload_;
  mutable std::set<std::string> learned_;
};

// ---- Requests and clusters of every shape ----

NodeMetrics RandomMetrics(std::mt19937_64& rng, TimeMs now) {
  NodeMetrics m;
  const int gpus = 1 + static_cast<int>(rng() % 8);
  const bool nvlinked = rng() % 2 == 0;
  for (int i = 0; i < gpus; ++i) {
    Gpu g;
    g.index = i;
    g.memory_total = (rng() % 2 ? 24 : 80) * kGi;
    g.memory_used = static_cast<Bytes>(static_cast<double>(rng() % 1000) / 1000 *
                                       static_cast<double>(g.memory_total));
    g.nvlink_utilization = static_cast<double>(rng() % 100) / 100;
    if (nvlinked)
      for (int j = 0; j < gpus; ++j)
        if (j != i) g.nvlink_peers.push_back({j, 1 + static_cast<int>(rng() % 12)});
    m.gpus.push_back(g);
  }
  m.storage_await_ms = static_cast<double>(rng() % 12000) / 100;
  // Most fresh, some stale (older than metricsStaleAfter).
  m.sample_time_ms = now - (rng() % 10 == 0 ? 10 * 60'000 : static_cast<TimeMs>(rng() % 20'000));
  return m;
}

std::string RandomPod(std::mt19937_64& rng) {
  json annotations = json::object();
  switch (rng() % 6) {
    case 0:
      annotations["ai.gpu-memory"] = std::to_string(1 + rng() % 60) + "Gi";
      break;
    case 1:
      annotations["ai.gpu-reject-threshold"] = rng() % 2 ? "0.3" : "high";  // "high": unresolvable
      break;
    case 2:
      annotations["ai.nvlink-required"] = "true";
      break;
    case 3:
      annotations["ai.model-size"] = std::to_string(1 + rng() % 30) + "Gi";
      break;
    default:
      break;
  }
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u-1"}}},
      {"spec",
       {{"containers",
         {{{"name", "c"},
           {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(1 + rng() % 4)}}}}}}}}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod.dump();
}

json NodeObject(const std::string& name, bool golden) {
  json labels = {{"zone", "a"}};
  if (golden) labels["tidal.io/pool"] = "golden";
  return {
      {"metadata", {{"name", name}, {"labels", labels}}},
      {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}, {"cpu", "32"}, {"memory", "256Gi"}}}}}};
}

struct Cluster {
  std::vector<std::string> names;  // every node the scheduler knows
  std::shared_ptr<ClusterView> view;
};

// n nodes, about 1 in 9 without series, some golden; the source healthy or
// failing for `failing_ms` (stages 1 and 2).
Cluster RandomCluster(std::mt19937_64& rng, std::size_t n, TimeMs now, TimeMs failing_ms) {
  Cluster c;
  MetricsSnapshot snapshot;
  std::unordered_map<std::string, NodeInfo> infos;
  for (std::size_t i = 0; i < n; ++i) {
    // Names the JSON encoder must escape now and then.
    const std::string name = (i % 97 == 5 ? "odd\"name\\" : "gpu-node-") + std::to_string(i);
    c.names.push_back(name);
    if (rng() % 9 != 0) snapshot.nodes[name] = RandomMetrics(rng, now);
    NodeInfo info;
    info.allocatable_gpus = 8;
    if (i % 4 == 0) info.labels["tidal.io/pool"] = "golden";
    infos[name] = info;
  }
  snapshot.fetched_at_ms = now;
  auto view = std::make_shared<ClusterView>();
  auto nodes = std::make_shared<NodeMap>();
  BuildNodes(&snapshot, infos, nodes.get());
  view->nodes = nodes;
  view->snapshot = std::make_shared<const MetricsSnapshot>(std::move(snapshot));
  view->generation = 1;
  view->health.last_success_ms = failing_ms ? now - failing_ms - 1 : now;
  view->health.failing_since_ms = failing_ms ? now - failing_ms : 0;
  c.view = view;
  return c;
}

std::string Request(const std::string& pod, const std::vector<std::string>& names,
                    bool nodes_mode) {
  json body = {{"Pod", json::parse(pod)}, {"Nodes", nullptr}, {"NodeNames", nullptr}};
  if (nodes_mode) {
    json items = json::array();
    for (const auto& n : names) items.push_back(NodeObject(n, n.size() % 3 == 0));
    body["Nodes"] = {{"metadata", json::object()}, {"items", items}};
  } else {
    body["NodeNames"] = names;
  }
  return body.dump();
}

// A random subset of the cluster's names in random order, with names it does not know.
std::vector<std::string> Candidates(std::mt19937_64& rng, const Cluster& c) {
  std::vector<std::string> names;
  for (const auto& n : c.names)
    if (rng() % 8 != 0) names.push_back(n);
  for (int k = 0; k < 3; ++k)
    names.push_back("not-in-the-view-" + std::to_string(k) + "-" + std::to_string(rng() % 1000));
  std::shuffle(names.begin(), names.end(), rng);
  return names;
}

// The prioritize a filter's answer leads to, as kube-scheduler sends it (Go's
// encoding: its fields in order, no spaces; `pod` as the filter sent it).
std::string FollowUpPrioritize(const std::string& pod, const json& filtered) {
  return R"({"Pod":)" + pod + R"(,"Nodes":)" + filtered["Nodes"].dump() + R"(,"NodeNames":)" +
         filtered["NodeNames"].dump() + "}";
}

TEST(ReferencePath, EveryFastPathAnswersAsTheReferenceDoes) {
  const TimeMs now = 1'000'000'000;
  PolicyConfig least_loaded = DefaultPolicyConfig();
  least_loaded.when_all_rejected = WhenAllRejected::kLeastLoaded;
  // fgd learning the GPU workload from the filters (each extender and the
  // reference learn the same pods in the same order).
  PolicyConfig learned_fgd = DefaultPolicyConfig();
  learned_fgd.plugins.push_back({"fgd", true, 1, "{tasks: learned, wholeGpuScoreStep: 3}"});
  const struct {
    const char* name;
    std::size_t nodes;
    TimeMs failing_ms;  // 0: healthy source
    PolicyConfig config;
    int requests;
  } cases[] = {
      {"no nodes", 0, 0, DefaultPolicyConfig(), 4},
      {"a few nodes", 5, 0, DefaultPolicyConfig(), 40},
      {"a few nodes, least-loaded", 5, 0, least_loaded, 40},
      {"one part", 300, 0, DefaultPolicyConfig(), 12},
      {"stage 1", 300, 5'000, DefaultPolicyConfig(), 6},
      {"stage 2", 300, 60'000, DefaultPolicyConfig(), 6},
      {"parts over helpers", 2600, 0, DefaultPolicyConfig(), 6},
      {"parts over helpers, least-loaded", 2600, 0, least_loaded, 4},
      {"fgd learning the workload", 300, 0, learned_fgd, 12},
  };
  // What the requests reached, over all cases: each path at least once.
  std::size_t passed = 0, failed = 0, unresolvable = 0, escaped = 0;
  auto log =
      std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  std::mt19937_64 rng(20261205);
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const Cluster cluster = RandomCluster(rng, tc.nodes, now, tc.failing_ms);
    ViewStore store;
    store.Publish(cluster.view);
    ManualClock clock;
    clock.Set(now);
    ExtenderMetrics metrics;
    Extender one(tc.config, store, clock, log, &metrics, 1);
    Extender three(tc.config, store, clock, log, &metrics, 3);
    const Reference reference(tc.config);
    const auto view = store.Load();
    const int stage = one.Stage(now, *view);
    EXPECT_EQ(stage, tc.failing_ms == 0                                   ? 0
                     : tc.failing_ms < tc.config.fallback.stage2_after_ms ? 1
                                                                          : 2);
    for (int r = 0; r < tc.requests; ++r) {
      const bool nodes_mode = r % 3 == 2;
      SCOPED_TRACE(std::to_string(r) + (nodes_mode ? ", Nodes" : ", NodeNames"));
      const std::string pod = RandomPod(rng);
      const std::string filter = Request(pod, Candidates(rng, cluster), nodes_mode);
      const json want = reference.Filter(filter, *view, now, stage);
      for (Extender* ext : {&one, &three}) {
        const Reply got = ext->Filter(filter);
        ASSERT_EQ(got.http_status, 200);
        const json answer = json::parse(got.body);
        ASSERT_EQ(answer, want) << "request " << filter.substr(0, 400);
        passed += want["NodeNames"].is_null() ? 0 : want["NodeNames"].size();
        failed += want["FailedNodes"].size();
        unresolvable += want["FailedAndUnresolvableNodes"].size();
        escaped += got.body.find("odd\\\"name") != std::string::npos ? 1 : 0;
        // The prioritize that follows (the memo's byte-for-byte reuse), the same
        // spaced out (decoded: the memo's verdicts), and one no filter came before.
        const std::string follow = FollowUpPrioritize(pod, answer);
        const json scores = reference.Prioritize(follow, *view, now, stage);
        EXPECT_EQ(json::parse(ext->Prioritize(follow).body), scores);
        EXPECT_EQ(json::parse(ext->Prioritize(json::parse(follow).dump(1)).body), scores);
        // An extender that has filtered nothing has learned nothing either.
        Extender fresh(tc.config, store, clock, log, &metrics, ext == &one ? 1 : 3);
        EXPECT_EQ(json::parse(fresh.Prioritize(filter).body),
                  Reference(tc.config).Prioritize(filter, *view, now, stage));
      }
    }
    for (const char* reuse : {"answer", "verdicts", "none"})
      EXPECT_GT(metrics.prioritize_reuse.With({reuse}).Get(), 0) << reuse;
  }
  EXPECT_GT(passed, 0u);
  EXPECT_GT(failed, 0u);
  EXPECT_GT(unresolvable, 0u);
  EXPECT_GT(escaped, 0u);
}

}  // namespace
}  // namespace tidal::extender
