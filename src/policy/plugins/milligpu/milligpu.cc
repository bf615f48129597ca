#include "policy/plugins/milligpu/milligpu.h"

#include <fmt/format.h>

#include <iterator>
#include <string>

#include "tidal/policy/yaml_util.h"

namespace tidal {

namespace {
std::string JoinModels(const std::vector<std::string>& models) {
  std::string s;
  for (const auto& m : models) s += (s.empty() ? "" : "|") + m;
  return s;
}

// Reasons, deferred (Status::Deferred): formatted only when read (the simulators
// reject thousands of nodes per pod and read none of them).
void CpuShortReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "CPU {}m requested, {}m left", a[0].i, a[1].i);
}
void MemoryShortReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "memory {} MiB requested, {} MiB left", a[0].i, a[1].i);
}
void NoShareFreeReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "no GPU with {} milli-GPU free", a[0].i);
}
void TooFewWholeGpusReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{} whole GPUs free, {} needed", a[0].i, a[1].i);
}
}  // namespace

Status MilliGpu::FilterOne(const CycleState& cycle, const NodeState& node,
                           NodeScratch& scratch) const {
  const PodDemand& pod = *cycle.pod;
  if (CpuLeft(node) < pod.cpu_milli)
    return Status::Deferred(Code::kUnfit, CpuShortReason,
                            {Status::Int(pod.cpu_milli), Status::Int(CpuLeft(node))});
  if (MemoryLeft(node) < pod.memory_request)
    return Status::Deferred(
        Code::kUnfit, MemoryShortReason,
        {Status::Int(pod.memory_request >> 20), Status::Int(MemoryLeft(node) >> 20)});
  if (pod.gpu_count <= 0) return Status::Fits();
  if (node.gpus.empty()) return Status::Unfit("no GPUs");
  if (!ModelAccepted(pod.gpu_models, NodeGpuModel(node)))
    return Status::Unfit("GPU model " + NodeGpuModel(node) + " not accepted (" +
                         JoinModels(pod.gpu_models) + ")");
  std::uint64_t draw = 0;
  if (args_.pick == GpuPick::kRandom) {
    // FNV-1a over seed, pod and node: the same pod on the same node draws the same.
    draw = 0xcbf29ce484222325ULL ^ args_.seed;
    for (const std::string* s : {&pod.namespace_name, &pod.name, &pod.uid, &node.name}) {
      for (unsigned char c : *s) draw = (draw ^ c) * 0x100000001b3ULL;
      draw = (draw ^ '/') * 0x100000001b3ULL;
    }
    draw ^= draw >> 29;
  }
  const GpuSet gpus = PickGpus(node, pod, args_.pick, draw);
  if (gpus.Empty()) {
    if (SharesGpu(pod))
      return Status::Deferred(Code::kUnfit, NoShareFreeReason, {Status::Int(pod.gpu_milli)});
    return Status::Deferred(Code::kUnfit, TooFewWholeGpusReason,
                            {Status::Int(FullyFreeGpus(node)), Status::Int(pod.gpu_count)});
  }
  scratch.gpus = gpus;
  scratch.placed = true;
  return Status::Fits();
}

std::unique_ptr<Plugin> NewMilliGpu(const YAML::Node& args, const std::string& path,
                                    ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<MilliGpu, MilliGpuArgs>(args, path, errors);
}

}  // namespace tidal
