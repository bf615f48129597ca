#pragma once
// What every decoded pod must satisfy, whatever its text: a failed decode names a
// reason and leaves nothing behind; a decoded pod turns into a sane demand, and a
// malformed field makes it unresolvable instead of loosening a check.
#include <cmath>

#include "check.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/policy/config.h"
#include "tidal/policy/cycle.h"
#include "tidal/policy/plugin.h"

namespace tidal::fuzz {

inline void CheckFailedDecode(const Status& st, const RawPod& pod) {
  TIDAL_FUZZ_CHECK(st.code() == Code::kError, "decode failures are errors");
  TIDAL_FUZZ_CHECK(!st.reason().empty(), "a decode failure says why");
  TIDAL_FUZZ_CHECK(pod.name.empty() && pod.containers.empty() && pod.annotations.empty(),
                   "a failed decode leaves an empty pod");
}

inline void CheckDemand(const RawPod& pod) {
  const PodDemand d = ToPodDemand(pod);
  TIDAL_FUZZ_CHECK(d.gpu_count >= 0, "GPU count is never negative");
  TIDAL_FUZZ_CHECK(d.cpu_milli >= 0 && d.memory_request >= 0, "requests are never negative");
  TIDAL_FUZZ_CHECK(d.gpu_memory_per_gpu >= 0 && d.model_size >= 0, "memory is never negative");
  if (d.gpu_reject_threshold)
    TIDAL_FUZZ_CHECK(*d.gpu_reject_threshold >= 0 && *d.gpu_reject_threshold <= 1,
                     "a pod threshold is in [0, 1]");
  if (pod.annotations.count(std::string(kAnnotationRejectThreshold)) && !d.gpu_reject_threshold)
    TIDAL_FUZZ_CHECK(!d.invalid_reason.empty(), "an unreadable threshold rejects the pod");

  const PolicyConfig config = DefaultPolicyConfig();
  CycleState state;
  const Status st = BuildCycleState(config, d, &state);
  if (!d.invalid_reason.empty()) {
    TIDAL_FUZZ_CHECK(st.code() == Code::kUnresolvable, "a malformed pod is unresolvable");
    return;
  }
  const EffectiveThresholds e = ResolveThresholds(config, d);
  const EffectiveThresholds defaults = ResolveThresholds(config, PodDemand{});
  TIDAL_FUZZ_CHECK(e.gpu_memory.reject <= defaults.gpu_memory.reject,
                   "no pod raises its threshold above the cluster's");
  TIDAL_FUZZ_CHECK(e.gpu_memory.warn <= e.gpu_memory.reject, "warn is at or below reject");
}

}  // namespace tidal::fuzz
