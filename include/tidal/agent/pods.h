#pragma once
// The NVLink competition index: NVLink-using pods running on this node divided
// by (GPUs × slots per GPU), from the kubelet's pod list (or a file in tests).
#include <functional>
#include <optional>
#include <string>

#include "tidal/agent/collector.h"

namespace tidal::agent {

// Counts pods in a Kubernetes PodList (JSON) that run on `node` (spec.nodeName,
// when set) in phase Running and use NVLink by the policy's rules (docs/design.md#nvlink-use).
// A malformed document or item gives a Status naming the item.
Status CountNvlinkPods(std::string_view pod_list_json, const std::string& node, int* out);

// Fetches the PodList text: a file reader in tests, the kubelet in a pod.
using PodListSource = std::function<Status(std::string* out)>;

class CompetitionCollector final : public Collector {
 public:
  // `source` may be empty: the series is left out and the up series says why.
  // `gpu_count` is the GPU collector's count of the same pass.
  CompetitionCollector(std::string node, PodListSource source,
                       std::function<std::optional<int>()> gpu_count, int slots_per_gpu = 2);
  std::string_view Name() const override { return "nvlink_competition"; }
  Status Collect(MetricSet& out) override;

 private:
  std::string node_;
  PodListSource source_;
  std::function<std::optional<int>()> gpu_count_;
  int slots_;
};

}  // namespace tidal::agent
