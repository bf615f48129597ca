// The extender's server-side cost, without HTTP (bench/README.md):
//  - filter + prioritize in NodeNames mode at 100, 1 000 and 5 000 nodes, the way
//    kube-scheduler calls them (prioritize with the filter's survivors);
//  - decoding a full `Nodes` payload of 1 000 realistic nodes (~14 KB each).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "tidal/extender/extender.h"

namespace tidal::extender {
namespace {

using nlohmann::json;
constexpr Bytes kGi = Bytes{1} << 30;

// The same cluster shape as policy_bench: 8 × 80 GiB GPUs; 60 % NVSwitch.
std::shared_ptr<const ClusterView> MakeView(int n, TimeMs now) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  auto nodes = std::make_shared<std::unordered_map<std::string, NodeState>>();
  for (int i = 0; i < n; ++i) {
    NodeState s;
    s.name = "gpu-node-" + std::to_string(i);
    const bool nvswitch = u(rng) < 0.6;
    const double base = u(rng) * 0.95;
    for (int g = 0; g < 8; ++g) {
      Gpu gpu;
      gpu.index = g;
      gpu.memory_total = 80 * kGi;
      const double f = std::clamp(base + (u(rng) - 0.5) * 0.1, 0.0, 1.0);
      gpu.memory_used = static_cast<Bytes>(f * 80 * kGi);
      gpu.nvlink_utilization = nvswitch ? u(rng) * 0.7 : 0;
      if (nvswitch)
        for (int p = 0; p < 8; ++p)
          if (p != g) gpu.nvlink_peers.push_back({p, 12});
      s.gpus.push_back(gpu);
    }
    s.storage_await_ms = u(rng) * 90;
    s.sample_time_ms = now - 5'000;
    s.Finalize();
    nodes->emplace(s.name, std::move(s));
  }
  auto view = std::make_shared<ClusterView>();
  view->generation = 1;
  view->nodes = std::move(nodes);
  view->snapshot = std::make_shared<MetricsSnapshot>();
  view->health.attempts = 1;
  view->health.last_success_ms = now;
  return view;
}

std::string PodJson() {
  return R"({"metadata":{"name":"train-1","namespace":"ml","uid":"u-1","annotations":{"ai.gpu-memory":"20Gi"}},)"
         R"("spec":{"containers":[{"name":"c","image":"nvcr.io/nvidia/pytorch:24.01",)"
         R"("resources":{"limits":{"nvidia.com/gpu":"1","cpu":"8","memory":"64Gi"}}}]}})";
}

std::string NamesBody(const std::vector<std::string>& names) {
  return R"({"Pod":)" + PodJson() + R"(,"Nodes":null,"NodeNames":)" + json(names).dump() + "}";
}

void BM_FilterPrioritize(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  ManualClock clock(10'000'000);
  ViewStore store;
  store.Publish(MakeView(n, clock.NowMs()));
  ExtenderMetrics metrics;
  auto log =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  Extender ext(DefaultPolicyConfig(), store, clock, log, &metrics, threads);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("gpu-node-" + std::to_string(i));
  const std::string filter_body = NamesBody(names);
  const json first = json::parse(ext.Filter(filter_body).body);
  std::vector<std::string> survivors = first["NodeNames"].get<std::vector<std::string>>();
  const std::string prioritize_body = NamesBody(survivors);
  std::size_t bytes = 0;
  for (auto _ : state) {
    Reply f = ext.Filter(filter_body);
    Reply p = ext.Prioritize(prioritize_body);
    bytes += f.body.size() + p.body.size();
    benchmark::DoNotOptimize(p.body.data());
  }
  state.counters["feasible"] = static_cast<double>(survivors.size());
  // Each verb's mean server-side time (its histogram's sum over its count), in µs.
  for (const char* verb : {"filter", "prioritize"}) {
    const Histogram& h = metrics.duration.With({verb}, LatencyBuckets());
    state.counters[std::string(verb) + "_us"] =
        1e6 * h.Sum() / static_cast<double>(std::max<std::uint64_t>(1, h.Counts().back()));
  }
  // 1: every prioritize found the filter's answer sent back (as kube-scheduler does).
  state.counters["reused_answer"] =
      metrics.prioritize_reuse.With({"answer"}).Get() / static_cast<double>(state.iterations());
  state.counters["request_bytes"] =
      static_cast<double>(filter_body.size() + prioritize_body.size());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(filter_body.size() + prioritize_body.size()));
}
// The machine is shared: with --benchmark_repetitions the minimum is the figure
// least disturbed by other processes (as in policy_bench).
double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// threads: the extender's parallelism (its own helpers work on one request); the
// time is the caller's wall time.
BENCHMARK(BM_FilterPrioritize)
    ->ComputeStatistics("min", Min)
    ->ArgNames({"nodes", "threads"})
    ->Args({100, 1})
    ->Args({1000, 1})
    ->Args({5000, 1})
    ->Args({1000, 2})
    ->Args({5000, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A GPU node as the API server serves it: GPU feature discovery labels,
// annotations, conditions, addresses, node info and the image list that makes
// most of a real node's size.
json RealisticNode(int i) {
  json labels = {{"kubernetes.io/hostname", "gpu-node-" + std::to_string(i)},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"node.kubernetes.io/instance-type", "p4d.24xlarge"},
                 {"topology.kubernetes.io/zone", "us-east-1a"},
                 {"topology.kubernetes.io/region", "us-east-1"},
                 {"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                 {"nvidia.com/gpu.count", "8"},
                 {"nvidia.com/gpu.memory", "81920"},
                 {"nvidia.com/cuda.driver.major", "550"},
                 {"nvidia.com/mig.capable", "true"}};
  for (int k = 0; k < 30; ++k)
    labels["feature.node.kubernetes.io/cpu-cpuid." + std::to_string(k)] = "true";
  json images = json::array();
  for (int k = 0; k < 40; ++k)
    images.push_back(
        {{"names",
          {"registry.example.com/ml/training-image-" + std::to_string(k) +
               "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
           "registry.example.com/ml/training-image-" + std::to_string(k) + ":v1." +
               std::to_string(k)}},
         {"sizeBytes", 5'000'000'000LL + k}});
  json conditions = json::array();
  for (const char* c : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"})
    conditions.push_back(
        {{"type", c},
         {"status", std::string(c) == "Ready" ? "True" : "False"},
         {"lastHeartbeatTime", "2026-12-01T10:00:00Z"},
         {"lastTransitionTime", "2026-11-01T10:00:00Z"},
         {"reason", std::string("Kubelet") + c},
         {"message", "kubelet has sufficient resources and is posting ready status"}});
  return {{"metadata",
           {{"name", "gpu-node-" + std::to_string(i)},
            {"uid", "8d7c6b5a-" + std::to_string(i)},
            {"resourceVersion", std::to_string(1000000 + i)},
            {"creationTimestamp", "2026-01-01T00:00:00Z"},
            {"labels", labels},
            {"annotations",
             {{"node.alpha.kubernetes.io/ttl", "0"},
              {"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
              {"nfd.node.kubernetes.io/feature-labels",
               "cpu-cpuid.ADX,cpu-cpuid.AESNI,cpu-cpuid.AVX,cpu-cpuid.AVX2"}}}}},
          {"spec",
           {{"podCIDR", "10.0." + std::to_string(i % 250) + ".0/24"},
            {"providerID", "aws:///us-east-1a/i-0abc"}}},
          {"status",
           {{"capacity",
             {{"cpu", "96"}, {"memory", "1152Gi"}, {"nvidia.com/gpu", "8"}, {"pods", "110"}}},
            {"allocatable",
             {{"cpu", "95500m"}, {"memory", "1140Gi"}, {"nvidia.com/gpu", "8"}, {"pods", "110"}}},
            {"conditions", conditions},
            {"addresses",
             {{{"type", "InternalIP"}, {"address", "10.1.2.3"}},
              {{"type", "Hostname"}, {"address", "gpu-node"}}}},
            {"nodeInfo",
             {{"machineID", "ec2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c"},
              {"systemUUID", "ec2a0b1c-2d3e-4f5a-6b7c-8d9e0f1a2b3c"},
              {"bootID", "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e"},
              {"kernelVersion", "6.1.0-18-amd64"},
              {"osImage", "Debian GNU/Linux 12 (bookworm)"},
              {"containerRuntimeVersion", "containerd://1.7.13"},
              {"kubeletVersion", "v1.30.4"},
              {"kubeProxyVersion", "v1.30.4"},
              {"operatingSystem", "linux"},
              {"architecture", "amd64"}}},
            {"images", images}}}};
}

void BM_DecodeNodesPayload(benchmark::State& state) {
  json items = json::array();
  for (int i = 0; i < 1000; ++i) items.push_back(RealisticNode(i));
  const std::string body = R"({"Pod":)" + PodJson() + R"(,"Nodes":{"metadata":{},"items":)" +
                           items.dump() + R"(},"NodeNames":null})";
  const DecodeOptions options{/*keep_node_json=*/state.range(0) != 0};
  ExtenderArgs args;
  ArgsDecoder decoder;  // reused, as each request context does
  for (auto _ : state) {
    Status s = decoder.Decode(body, options, &args);
    if (!s.ok()) state.SkipWithError(s.reason().c_str());
    benchmark::DoNotOptimize(args.nodes.data());
  }
  state.counters["bytes_per_node"] = static_cast<double>(body.size()) / 1000;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_DecodeNodesPayload)->ArgName("echo")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The filter's decode alone in NodeNames mode (on the request's own thread before
// its parts are shared out): the Pod and 5 000 names.
void BM_DecodeNamesPayload(benchmark::State& state) {
  std::vector<std::string> names;
  for (int i = 0; i < state.range(0); ++i) names.push_back("gpu-node-" + std::to_string(i));
  const std::string body = NamesBody(names);
  ExtenderArgs args;
  ArgsDecoder decoder;
  for (auto _ : state) {
    Status s = decoder.Decode(body, DecodeOptions{/*keep_node_json=*/true}, &args);
    if (!s.ok()) state.SkipWithError(s.reason().c_str());
    benchmark::DoNotOptimize(args.node_names.bytes().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_DecodeNamesPayload)->ArgName("nodes")->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tidal::extender

BENCHMARK_MAIN();
