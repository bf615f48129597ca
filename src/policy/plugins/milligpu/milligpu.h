#pragma once
// milligpu: the resource fit of a GPU-sharing cluster (kube-scheduler's
// NodeResourcesFit on CPU and memory, plus the milli-GPU device fit of Alibaba's
// GPU-share scheduler): the node must have the pod's CPU and memory left, GPUs of
// a model the pod accepts, and enough free milli-GPU; it places the pod's GPUs.
#include <memory>

#include "policy/plugins/milligpu/milligpu_args.h"
#include "tidal/policy/plugin.h"

namespace tidal {

class MilliGpu final : public FilterEachNode<MilliGpu> {
 public:
  explicit MilliGpu(MilliGpuArgs args) : args_(args) {}
  std::string_view Name() const override { return "milligpu"; }
  Status FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch& scratch) const;

 private:
  MilliGpuArgs args_;
};

std::unique_ptr<Plugin> NewMilliGpu(const YAML::Node& args, const std::string& path,
                                    ConfigErrors& errors);

}  // namespace tidal
