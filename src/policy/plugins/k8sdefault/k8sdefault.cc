#include "policy/plugins/k8sdefault/k8sdefault.h"

#include <algorithm>
#include <cmath>

#include "tidal/policy/yaml_util.h"

namespace tidal {
namespace {

// kube-scheduler counts a container without requests as 100m CPU and 200 MiB.
constexpr std::int64_t kDefaultMilliCpu = 100;
constexpr Bytes kDefaultMemory = 200LL * 1024 * 1024;

std::int64_t LeastScore(std::int64_t requested, std::int64_t allocatable) {
  if (allocatable <= 0 || requested > allocatable) return 0;
  return (allocatable - requested) * 100 / allocatable;
}

}  // namespace

std::int64_t K8sDefault::LeastAllocated(const PodDemand& pod, const NodeState& node) const {
  std::int64_t sum = 0, weights = 0;
  if (node.cpu_milli_allocatable > 0) {
    const auto cpu = pod.cpu_milli > 0 ? pod.cpu_milli : kDefaultMilliCpu;
    sum += LeastScore(node.cpu_milli_requested + cpu, node.cpu_milli_allocatable);
    ++weights;
  }
  if (node.memory_allocatable > 0) {
    const auto mem = pod.memory_request > 0 ? pod.memory_request : kDefaultMemory;
    sum += LeastScore(node.memory_requested + mem, node.memory_allocatable);
    ++weights;
  }
  // Extended resources count only for pods that request them.
  if (args_.include_gpu && pod.gpu_count > 0 && node.AllocatableGpus() > 0) {
    sum += LeastScore(node.gpus_requested + pod.gpu_count, node.AllocatableGpus());
    ++weights;
  }
  return weights > 0 ? sum / weights : 0;
}

std::int64_t K8sDefault::BalancedAllocation(const PodDemand& pod, const NodeState& node) const {
  double f[3];
  int n = 0;
  auto frac = [](double req, double alloc) { return std::min(req / alloc, 1.0); };
  if (node.cpu_milli_allocatable > 0)
    f[n++] = frac(static_cast<double>(node.cpu_milli_requested + pod.cpu_milli),
                  static_cast<double>(node.cpu_milli_allocatable));
  if (node.memory_allocatable > 0)
    f[n++] = frac(static_cast<double>(node.memory_requested + pod.memory_request),
                  static_cast<double>(node.memory_allocatable));
  if (args_.include_gpu && pod.gpu_count > 0 && node.AllocatableGpus() > 0)
    f[n++] = frac(node.gpus_requested + pod.gpu_count, node.AllocatableGpus());
  double sd = 0;
  if (n == 2) {
    sd = std::fabs(f[0] - f[1]) / 2;
  } else if (n > 2) {
    double mean = 0;
    for (int i = 0; i < n; ++i) mean += f[i];
    mean /= n;
    double var = 0;
    for (int i = 0; i < n; ++i) var += (f[i] - mean) * (f[i] - mean);
    sd = std::sqrt(var / n);
  }
  return static_cast<std::int64_t>((1 - sd) * 100);
}

double K8sDefault::ScoreOne(const CycleState& cycle, const NodeState& node,
                            const NodeScratch&) const {
  // Both plugins have weight 1 in the default profile.
  return static_cast<double>(LeastAllocated(*cycle.pod, node) +
                             BalancedAllocation(*cycle.pod, node)) /
         2.0;
}

std::unique_ptr<Plugin> NewK8sDefault(const YAML::Node& args, const std::string& path,
                                      ConfigErrors& errors) {
  using namespace yamlutil;
  K8sDefaultArgs a;
  ConfigErrors local;
  if (IsMap(args, path, local)) {
    CheckKeys(args, path, {"includeGpu"}, local);
    ReadBool(args, path, "includeGpu", &a.include_gpu, local);
  }
  errors.Merge(local);
  if (!local.empty()) return nullptr;
  return std::make_unique<K8sDefault>(a);
}

}  // namespace tidal
