#pragma once
// The PreFilter step: everything about a pod computed once per cycle.
#include "tidal/core/status.h"
#include "tidal/policy/config.h"
#include "tidal/policy/fragmentation.h"
#include "tidal/policy/memory_learner.h"
#include "tidal/policy/plugin.h"

namespace tidal {

// Resolves the pod's thresholds (cluster → namespace → annotation, then the
// margin and decay slope), its per-GPU memory need and whether it uses NVLink.
// A pod whose object is malformed yields an unresolvable Status. With `learned`,
// an undeclared pod whose workload has enough observed peaks gets that estimate;
// with `workload`, the cycle carries the GPU workload learned so far.
Status BuildCycleState(const PolicyConfig& config, const PodDemand& pod, CycleState* out,
                       const MemoryLearner* learned = nullptr,
                       const WorkloadLearner* workload = nullptr);

EffectiveThresholds ResolveThresholds(const PolicyConfig& config, const PodDemand& pod);
Bytes EstimateMemoryNeed(const MemoryEstimate& estimate, const PodDemand& pod);

}  // namespace tidal
