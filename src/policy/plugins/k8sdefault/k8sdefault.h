#pragma once
// k8sdefault: kube-scheduler's default resource scoring, NodeResourcesFit
// LeastAllocated plus NodeResourcesBalancedAllocation (reference README §2), on
// CPU, memory and advertised nvidia.com/gpu. The baseline Tidal is measured against.
#include <memory>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

struct K8sDefaultArgs {
  bool include_gpu = true;  // nvidia.com/gpu in both plugins' resources
};

class K8sDefault final : public ScoreEachNode<K8sDefault> {
 public:
  explicit K8sDefault(K8sDefaultArgs args) : args_(args) {}
  std::string_view Name() const override { return "k8sdefault"; }
  double ScoreOne(const CycleState& cycle, const NodeState& node, const NodeScratch& scratch) const;
  // Each of the two plugins' integer scores, 0..100.
  std::int64_t LeastAllocated(const PodDemand& pod, const NodeState& node) const;
  std::int64_t BalancedAllocation(const PodDemand& pod, const NodeState& node) const;

 private:
  K8sDefaultArgs args_;
};

std::unique_ptr<Plugin> NewK8sDefault(const YAML::Node& args, const std::string& path,
                                      ConfigErrors& errors);

}  // namespace tidal
