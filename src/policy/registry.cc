#include "tidal/policy/registry.h"

#include "policy/plugins/balance/balance.h"
#include "policy/plugins/bestfit/bestfit.h"
#include "policy/plugins/fallback/fallback.h"
#include "policy/plugins/gpufit/gpufit.h"
#include "policy/plugins/k8sdefault/k8sdefault.h"
#include "policy/plugins/loadaware/loadaware.h"
#include "policy/plugins/resourcefit/resourcefit.h"

namespace tidal {

const std::vector<PluginEntry>& Registry() {
  static const std::vector<PluginEntry> entries = {
      {"loadaware", "reject filter and warning-band score on live load", NewLoadAware, true, 1},
      {"gpufit", "per-GPU free-memory fit and NVLink clique choice", NewGpuFit, true, 1},
      {"balance", "spread (least loaded first) or pack", NewBalance, true, 1},
      {"resourcefit", "kube-scheduler NodeResourcesFit filter on requests", NewResourceFit, false, 1},
      {"k8sdefault", "kube-scheduler LeastAllocated + BalancedAllocation", NewK8sDefault, false, 1},
      {"bestfit", "the node with the least free GPU memory that fits", NewBestFit, false, 1},
      {"fallback", "metrics down: remaining GPUs, then the golden pool only", NewFallback, false, 1},
  };
  return entries;
}

const PluginEntry* FindPlugin(const std::string& name) {
  for (const auto& e : Registry())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace tidal
