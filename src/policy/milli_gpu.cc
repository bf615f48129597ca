#include "tidal/policy/milli_gpu.h"

namespace tidal {

bool ModelAccepted(std::span<const std::string> models, const std::string& model) {
  if (models.empty()) return true;
  for (const auto& m : models)
    if (m == model) return true;
  return false;
}

std::int64_t MilliFreeTotal(const NodeState& node) {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += free[i];
  return sum;
}

int FullyFreeGpus(const NodeState& node) {
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  int whole = 0;
  for (std::size_t i = 0; i < n; ++i) whole += free[i] >= kMilliPerGpu ? 1 : 0;
  return whole;
}

GpuSet PickGpus(const NodeState& node, const PodDemand& pod, GpuPick pick, std::uint64_t draw) {
  GpuSet out;
  if (pod.gpu_count <= 0) return out;
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  if (SharesGpu(pod) && pick == GpuPick::kRandom) {
    std::uint64_t fitting = 0;
    for (std::size_t i = 0; i < n; ++i) fitting += free[i] >= pod.gpu_milli ? 1 : 0;
    if (fitting == 0) return out;
    std::uint64_t k = draw % fitting;
    for (std::size_t i = 0; i < n; ++i)
      if (free[i] >= pod.gpu_milli && k-- == 0) {
        out.Add(static_cast<int>(i));
        break;
      }
    return out;
  }
  if (SharesGpu(pod)) {
    int best = -1;
    for (std::size_t i = 0; i < n; ++i) {
      const int f = free[i];
      if (f < pod.gpu_milli) continue;
      const bool better = best < 0 || (pick == GpuPick::kBestFit ? f < free[best] : f > free[best]);
      if (better) best = static_cast<int>(i);
    }
    if (best >= 0) out.Add(best);
    return out;
  }
  int need = pod.gpu_count;
  for (std::size_t i = 0; i < n && need > 0; ++i)
    if (free[i] >= kMilliPerGpu) {
      out.Add(static_cast<int>(i));
      --need;
    }
  return need == 0 ? out : GpuSet();
}

std::uint64_t GpuPodKind(const PodDemand& pod) {
  if (pod.gpu_count <= 0) return 0;
  if (SharesGpu(pod)) return 1;
  return pod.gpu_count < 64 ? std::uint64_t{1} << pod.gpu_count : std::uint64_t{1} << 63;
}

}  // namespace tidal
