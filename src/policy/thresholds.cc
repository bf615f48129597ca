#include <algorithm>

#include "tidal/policy/cycle.h"

namespace tidal {

EffectiveThresholds ResolveThresholds(const PolicyConfig& config, const PodDemand& pod) {
  const TenantConfig* tenant = config.TenantFor(pod.namespace_name);
  Thresholds t = tenant ? tenant->thresholds : config.thresholds;
  if (pod.gpu_reject_threshold) {
    // A pod may only move its threshold inside the range its namespace allows.
    const double lo = tenant ? tenant->pod_threshold_min : 0.0;
    const double hi = tenant ? tenant->pod_threshold_max : config.thresholds.gpu_memory.reject;
    t.gpu_memory.reject = std::clamp(*pod.gpu_reject_threshold, lo, hi);
  }
  const double margin = config.reject_threshold_safety_margin;
  EffectiveThresholds e;
  e.gpu_memory.reject = std::max(0.0, t.gpu_memory.reject - margin);
  e.nvlink.reject = std::max(0.0, t.nvlink.reject - margin);
  e.await_ms.reject = std::max(0.0, t.await_ms.reject * (1.0 - margin));
  e.gpu_memory.warn = config.decay_slope_set ? e.gpu_memory.reject - config.gpu_memory_decay_slope
                                             : t.gpu_memory.warn;
  // A threshold moved below its warning level makes the band a step at reject.
  e.gpu_memory.warn = std::clamp(e.gpu_memory.warn, 0.0, e.gpu_memory.reject);
  e.nvlink.warn = std::min(t.nvlink.warn, e.nvlink.reject);
  e.await_ms.warn = std::min(t.await_ms.warn, e.await_ms.reject);
  return e;
}

}  // namespace tidal
