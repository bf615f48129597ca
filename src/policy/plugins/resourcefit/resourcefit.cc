#include "policy/plugins/resourcefit/resourcefit.h"

#include <fmt/format.h>

#include "tidal/kubetypes/quantity.h"

namespace tidal {

Status ResourceFit::FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch&) const {
  const PodDemand& pod = *cycle.pod;
  if (pod.gpu_count > 0 && node.gpus_requested + pod.gpu_count > node.AllocatableGpus())
    return Status::Unfit(
        fmt::format("Insufficient nvidia.com/gpu ({} of {} allocated, pod asks {})",
                    node.gpus_requested, node.AllocatableGpus(), pod.gpu_count));
  if (node.cpu_milli_allocatable > 0 &&
      node.cpu_milli_requested + pod.cpu_milli > node.cpu_milli_allocatable)
    return Status::Unfit("Insufficient cpu");
  if (node.memory_allocatable > 0 &&
      node.memory_requested + pod.memory_request > node.memory_allocatable)
    return Status::Unfit("Insufficient memory");
  return Status::Fits();
}

std::unique_ptr<Plugin> NewResourceFit(const YAML::Node& args, const std::string& path,
                                       ConfigErrors& errors) {
  if (args && !args.IsNull() && !(args.IsMap() && args.size() == 0)) {
    errors.Add(path, "resourcefit takes no args");
    return nullptr;
  }
  return std::make_unique<ResourceFit>();
}

}  // namespace tidal
