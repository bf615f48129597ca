// ExtenderArgs and ExtenderBindingArgs bodies as kube-scheduler posts them; a
// decoded request then goes through the whole filter verb on a fixed view, whose
// answer must be JSON that names every candidate exactly once.
#include <spdlog/sinks/null_sink.h>

#include <nlohmann/json.hpp>
#include <set>

#include "check.h"
#include "tidal/extender/extender.h"

namespace {

struct World {
  World()
      : log(std::make_shared<spdlog::logger>("fuzz",
                                             std::make_shared<spdlog::sinks::null_sink_mt>())) {
    auto view = std::make_shared<tidal::extender::ClusterView>();
    auto nodes = std::make_shared<std::unordered_map<std::string, tidal::NodeState>>();
    for (int i = 0; i < 3; ++i) {
      tidal::NodeState n;
      n.name = "node" + std::to_string(i);
      for (int g = 0; g < 4; ++g) {
        tidal::Gpu gpu;
        gpu.index = g;
        gpu.memory_total = 24LL << 30;
        gpu.memory_used = (static_cast<long long>(i) * 9) << 30;
        gpu.nvlink_peers = {{(g + 1) % 4, 2}};
        n.gpus.push_back(gpu);
      }
      n.sample_time_ms = 1'000'000;
      n.Finalize();
      nodes->emplace(n.name, n);
    }
    view->nodes = nodes;
    view->health.attempts = 1;
    view->health.last_success_ms = 1'000'000;
    store.Publish(view);
    ext = std::make_unique<tidal::extender::Extender>(tidal::DefaultPolicyConfig(), store, clock,
                                                      log, &metrics);
  }
  tidal::ManualClock clock{1'000'000};
  tidal::extender::ViewStore store;
  tidal::extender::ExtenderMetrics metrics;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<tidal::extender::Extender> ext;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World world;  // built once per fuzzing process
  const std::string_view body = tidal::fuzz::AsText(data, size);
  tidal::extender::ExtenderArgs args;
  const tidal::Status st = tidal::extender::DecodeExtenderArgs(body, {}, &args);
  if (!st.ok()) TIDAL_FUZZ_CHECK(!st.reason().empty(), "a decode error says what is wrong");

  const tidal::extender::Reply r = world.ext->Filter(body);
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  TIDAL_FUZZ_CHECK(!j.is_discarded() && j.is_object(), "filter answers a JSON object");
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(!j["Error"].get<std::string>().empty(),
                     "an undecodable body is an Error, not a pass list");
  } else {
    // Every candidate lands in exactly one of: survivors, failed, unresolvable.
    std::multiset<std::string> seen;
    if (j["NodeNames"].is_array())
      for (const auto& n : j["NodeNames"]) seen.insert(n.get<std::string>());
    else if (j["Nodes"].is_object())
      for (const auto& n : j["Nodes"]["items"])
        seen.insert(n["metadata"]["name"].get<std::string>());
    for (const auto& [k, v] : j["FailedNodes"].items()) seen.insert(k);
    for (const auto& [k, v] : j["FailedAndUnresolvableNodes"].items()) seen.insert(k);
    std::multiset<std::string> want;
    if (args.has_nodes)
      for (const auto& n : args.nodes) want.insert(n.name);
    else
      for (const auto& n : args.node_names.Strings()) want.insert(n);
    // Duplicate names in one request collapse in the JSON maps; compare the sets.
    TIDAL_FUZZ_CHECK(std::set<std::string>(seen.begin(), seen.end()) ==
                         std::set<std::string>(want.begin(), want.end()),
                     "every candidate is answered");
  }
  const tidal::extender::Reply p = world.ext->Prioritize(body);
  if (p.http_status == 200) {
    const auto pj = nlohmann::json::parse(p.body, nullptr, false);
    TIDAL_FUZZ_CHECK(pj.is_array(), "prioritize answers a list");
    for (const auto& hp : pj)
      TIDAL_FUZZ_CHECK(hp["Score"].get<long long>() >= 0 && hp["Score"].get<long long>() <= 10,
                       "score in 0..10");
  }
  tidal::extender::BindingArgs b;
  if (tidal::extender::DecodeBindingArgs(body, &b).ok())
    TIDAL_FUZZ_CHECK(!b.pod_name.empty() && !b.node.empty(),
                     "a decoded binding names pod and node");
  return 0;
}
