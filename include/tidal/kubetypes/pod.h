#pragma once
// Decoding Kubernetes Pod objects (JSON with simdjson; YAML in pod_yaml.h) into
// the pod's GPU demand. Malformed input gives a Status naming the field; a
// malformed annotation gives a PodDemand with invalid_reason set (the pod is then
// unresolvable everywhere), never a crash and never a looser check.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"
#include "tidal/core/types.h"

namespace tidal {

struct RawContainer {
  std::string name;
  std::string image;
  std::map<std::string, std::string> env;       // literal values only
  std::map<std::string, std::string> requests;  // resource name → quantity text
  std::map<std::string, std::string> limits;
};

struct RawPod {
  std::string namespace_name = "default";
  std::string name;
  std::string uid;
  std::string node_name;  // spec.nodeName
  std::string phase;      // status.phase
  // What kube-scheduler's queue orders by and skips: spec.schedulerName,
  // spec.priority, metadata.creationTimestamp (RFC 3339, UTC: ordered as text) and
  // a PodScheduled condition False for Unschedulable (the pod waits outside the
  // active queue until the cluster changes).
  std::string scheduler_name;
  std::int64_t priority = 0;
  std::string created;
  bool unschedulable = false;
  Labels labels;
  Labels annotations;
  std::vector<RawContainer> containers;
  std::vector<RawContainer> init_containers;
};

Status DecodePodJson(std::string_view json, RawPod* out);

// GPU count from nvidia.com/gpu (limits, else requests; summed over containers,
// max with init containers), annotations ai.gpu-memory, ai.model-size,
// ai.gpu-reject-threshold, ai.nvlink-required, ai.auto-nvlink, env
// AI_NV_LINK_REQUIRED and AI_LOAD_TYPE, images, cpu/memory requests.
PodDemand ToPodDemand(const RawPod& pod);

// Strict parse of ai.gpu-reject-threshold: a plain decimal in [0, 1], no spaces.
std::optional<double> ParseRejectThreshold(std::string_view text, std::string* error);

// How a pod that does not say so is recognised as using NVLink.
struct NvlinkDetection {
  int slots_per_gpu = 2;
  std::vector<std::string> image_patterns{"pytorch"};
  int min_gpus = 2;  // an image match flags the pod only with at least this many GPUs
};

// ai.nvlink-required, or (with at least min_gpus GPUs) ai.auto-nvlink or an image
// matching one of the patterns.
bool PodUsesNvlink(const NvlinkDetection& detection, const PodDemand& pod);

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
// The GPU indices ("0,2") the extender's /bind chose for a pod; read by Tidal's
// device plugin (which gives those GPUs), the extender after a restart and the
// rebalancer.
inline constexpr std::string_view kAnnotationGpus = "tidal.io/gpus";
// The indices the node's device plugin really gave the pod, in the same grammar.
inline constexpr std::string_view kAnnotationGpusAllocated = "tidal.io/gpus-allocated";
inline constexpr std::string_view kAnnotationGpuMemory = "ai.gpu-memory";
inline constexpr std::string_view kAnnotationModelSize = "ai.model-size";
inline constexpr std::string_view kAnnotationRejectThreshold = "ai.gpu-reject-threshold";
inline constexpr std::string_view kAnnotationNvlinkRequired = "ai.nvlink-required";
inline constexpr std::string_view kAnnotationAutoNvlink = "ai.auto-nvlink";
inline constexpr std::string_view kEnvNvlinkRequired = "AI_NV_LINK_REQUIRED";
inline constexpr std::string_view kEnvLoadType = "AI_LOAD_TYPE";

}  // namespace tidal
