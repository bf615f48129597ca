#include "policy/plugins/milligpu/milligpu.h"

#include <string>

#include "tidal/policy/yaml_util.h"

namespace tidal {

namespace {
std::string JoinModels(const std::vector<std::string>& models) {
  std::string s;
  for (const auto& m : models) s += (s.empty() ? "" : "|") + m;
  return s;
}
}  // namespace

Status MilliGpu::FilterOne(const CycleState& cycle, const NodeState& node,
                           NodeScratch& scratch) const {
  const PodDemand& pod = *cycle.pod;
  if (CpuLeft(node) < pod.cpu_milli)
    return Status::Unfit("CPU " + std::to_string(pod.cpu_milli) + "m requested, " +
                         std::to_string(CpuLeft(node)) + "m left");
  if (MemoryLeft(node) < pod.memory_request)
    return Status::Unfit("memory " + std::to_string(pod.memory_request >> 20) + " MiB requested, " +
                         std::to_string(MemoryLeft(node) >> 20) + " MiB left");
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
      return Status::Unfit("no GPU with " + std::to_string(pod.gpu_milli) + " milli-GPU free");
    return Status::Unfit(std::to_string(FullyFreeGpus(node)) + " whole GPUs free, " +
                         std::to_string(pod.gpu_count) + " needed");
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
