#include "tidal/policy/cycle.h"

#include <algorithm>
#include <limits>

namespace tidal {

Bytes EstimateMemoryNeed(const MemoryEstimate& estimate, const PodDemand& pod) {
  if (pod.gpu_memory_declared) return pod.gpu_memory_per_gpu;
  if (pod.model_size > 0) {
    // CUDA context plus activations and optimiser state: 2–3× the parameters,
    // spread over the pod's GPUs.
    const int gpus = std::max(1, pod.gpu_count);
    const double need = static_cast<double>(estimate.cuda_context) +
                        estimate.parameter_factor * static_cast<double>(pod.model_size) / gpus;
    // The model size is user input: an absurd one saturates (the pod fits on no
    // GPU) rather than overflowing the conversion.
    constexpr Bytes kMaxNeed = std::numeric_limits<Bytes>::max();
    return need < static_cast<double>(kMaxNeed) ? static_cast<Bytes>(need) : kMaxNeed;
  }
  auto it = estimate.by_load_type.find(pod.load_type);
  return it != estimate.by_load_type.end() ? it->second : estimate.fallback;
}

Status BuildCycleState(const PolicyConfig& config, const PodDemand& pod, CycleState* out,
                       const MemoryLearner* learned, const WorkloadLearner* workload) {
  out->pod = &pod;
  out->workload = workload ? workload->Current() : nullptr;
  out->gpu_choice_carried_out = workload && workload->GpuChoiceCarriedOut();
  if (!pod.invalid_reason.empty()) return Status::Unresolvable(pod.invalid_reason);
  out->thresholds = ResolveThresholds(config, pod);
  out->memory_need_per_gpu =
      pod.gpu_count > 0 ? EstimateMemoryNeed(config.memory_estimate, pod) : 0;
  if (learned)
    if (const auto estimate = learned->EstimateFor(pod)) out->memory_need_per_gpu = *estimate;
  out->uses_nvlink = PodUsesNvlink(config.nvlink, pod);
  out->nvlink_required = pod.nvlink_required;
  out->nvlink_slots_per_gpu = config.nvlink.slots_per_gpu;
  return Status::Fits();
}

}  // namespace tidal
