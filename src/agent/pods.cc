#include "tidal/agent/pods.h"

#include <nlohmann/json.hpp>

#include "tidal/kubetypes/pod.h"

namespace tidal::agent {

Status CountNvlinkPods(std::string_view pod_list_json, const std::string& node, int* out) {
  *out = 0;
  const nlohmann::json doc =
      nlohmann::json::parse(pod_list_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Error("pod list: not valid JSON");
  if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array())
    return Status::Error("pod list: expected a PodList object with an \"items\" array");
  const NvlinkDetection detection;
  int n = 0;
  std::size_t i = 0;
  for (const auto& item : doc["items"]) {
    RawPod raw;
    if (Status st = DecodePodJson(item.dump(), &raw); !st.ok())
      return Status::Error("pod list: items[" + std::to_string(i) + "]: " + st.reason());
    ++i;
    if (!raw.node_name.empty() && raw.node_name != node) continue;
    if (raw.phase != "Running") continue;
    if (PodUsesNvlink(detection, ToPodDemand(raw))) ++n;
  }
  *out = n;
  return Status();
}

CompetitionCollector::CompetitionCollector(std::string node, PodListSource source,
                                           std::function<std::optional<int>()> gpu_count,
                                           int slots_per_gpu)
    : node_(std::move(node)),
      source_(std::move(source)),
      gpu_count_(std::move(gpu_count)),
      slots_(slots_per_gpu) {}

Status CompetitionCollector::Collect(MetricSet& out) {
  out.Declare("ai_nvlink_competition_index",
              "NVLink-using pods running on the node / (GPUs x NVLink slots per GPU).");
  out.Declare("ai_nvlink_pods", "NVLink-using pods running on the node.");
  if (!source_) return Status::Error("no pod source: give --kubelet-url (in a pod) or --pods-file");
  std::string text;
  if (Status st = source_(&text); !st.ok()) return st;
  int pods = 0;
  if (Status st = CountNvlinkPods(text, node_, &pods); !st.ok()) return st;
  out.Add("ai_nvlink_pods", {}, pods);
  const std::optional<int> gpus = gpu_count_ ? gpu_count_() : std::nullopt;
  if (!gpus) return Status::Error("GPU count unknown (the gpu collector is down)");
  if (*gpus == 0) return Status::Error("no GPUs on this node");
  out.Add("ai_nvlink_competition_index", {}, static_cast<double>(pods) / (*gpus * slots_));
  return Status();
}

}  // namespace tidal::agent
