#pragma once
// Milli-GPU arithmetic for clusters that share GPUs by request (the openb trace):
// a GPU is 1000 milli-GPU, a pod asks for `gpu_milli` on each of `gpu_count` GPUs,
// and only 1-GPU pods ask for less than a whole GPU. Shared by the placement
// baselines of the FGD paper and by the fragmentation measure.
#include <cstdint>
#include <span>
#include <string>

#include "tidal/core/types.h"

namespace tidal {

inline constexpr int kMilliPerGpu = 1000;

// The node's GPU model ("" without GPUs); openb nodes have one model each.
inline const std::string& NodeGpuModel(const NodeState& node) {
  static const std::string kNone;
  return node.gpus.empty() ? kNone : node.gpus.front().model;
}
// Whether a pod that accepts `models` (empty: any) may use GPUs of `model`.
bool ModelAccepted(std::span<const std::string> models, const std::string& model);
inline std::int64_t CpuLeft(const NodeState& n) {
  return n.cpu_milli_allocatable - n.cpu_milli_requested;
}
inline Bytes MemoryLeft(const NodeState& n) { return n.memory_allocatable - n.memory_requested; }
std::int64_t MilliFreeTotal(const NodeState& node);
int FullyFreeGpus(const NodeState& node);
inline std::int64_t PodMilliTotal(const PodDemand& p) {
  return static_cast<std::int64_t>(p.gpu_count) * p.gpu_milli;
}
inline bool SharesGpu(const PodDemand& p) { return p.gpu_count == 1 && p.gpu_milli < kMilliPerGpu; }

enum class GpuPick { kBestFit, kWorstFit, kRandom };

// The GPUs a pod would get: a sharing pod the GPU with the least (kBestFit) or
// most (kWorstFit) free share that fits, lowest index on ties, or (kRandom) the
// fitting GPU numbered `draw` modulo their count; a whole-GPU pod the first
// fully free GPUs by index. Empty when it does not fit.
GpuSet PickGpus(const NodeState& node, const PodDemand& pod, GpuPick pick, std::uint64_t draw = 0);

// The pod's GPU kind bit for NodeState::gpu_pod_kinds (0 for CPU-only pods).
std::uint64_t GpuPodKind(const PodDemand& pod);

}  // namespace tidal
