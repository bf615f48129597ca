#include "tidal/policy/registry.h"

#include "policy/plugins/balance/balance.h"
#include "policy/plugins/bestfit/bestfit.h"
#include "policy/plugins/bestfitmilli/bestfitmilli.h"
#include "policy/plugins/dotprod/dotprod.h"
#include "policy/plugins/fallback/fallback.h"
#include "policy/plugins/fgd/fgd.h"
#include "policy/plugins/gpuclustering/gpuclustering.h"
#include "policy/plugins/gpufit/gpufit.h"
#include "policy/plugins/gpupacking/gpupacking.h"
#include "policy/plugins/k8sdefault/k8sdefault.h"
#include "policy/plugins/loadaware/loadaware.h"
#include "policy/plugins/milligpu/milligpu.h"
#include "policy/plugins/random/random.h"
#include "policy/plugins/resourcefit/resourcefit.h"

namespace tidal {

const std::vector<PluginEntry>& Registry() {
  static const std::vector<PluginEntry> entries = {
      {"loadaware", "reject filter and warning-band score on live load", NewLoadAware, true, 1, ""},
      {"gpufit", "per-GPU free-memory fit and NVLink clique choice", NewGpuFit, true, 1, ""},
      {"balance", "spread (least loaded first) or pack", NewBalance, true, 1, ""},
      {"resourcefit", "kube-scheduler NodeResourcesFit filter on requests", NewResourceFit, false,
       1, ""},
      {"k8sdefault", "kube-scheduler LeastAllocated + BalancedAllocation", NewK8sDefault, false, 1,
       ""},
      {"bestfit", "the node with the least free GPU memory that fits", NewBestFit, false, 1, ""},
      {"fallback", "metrics down: remaining GPUs, then the golden pool only", NewFallback, false, 1,
       ""},
      {"milligpu", "CPU, memory, GPU-model and milli-GPU fit; places shared GPUs", NewMilliGpu,
       false, 1, ""},
      {"random", "a uniformly random feasible node (FGD paper baseline)", NewRandomScore, false, 1,
       ""},
      {"dotprod", "Tetris-style CPU/GPU alignment (FGD paper baseline)", NewDotProd, false, 1, ""},
      {"gpuclustering", "packs GPU pods of one kind together (FGD paper baseline)",
       NewGpuClustering, false, 1, ""},
      {"gpupacking", "shared GPUs, then used nodes, then idle ones (FGD paper baseline)",
       NewGpuPacking, false, 1, ""},
      {"bestfitmilli", "least CPU and milli-GPU left over (FGD paper baseline)", NewBestFitMilli,
       false, 1, ""},
      // In the default profile: the workload learned from the pods, and only where
      // Tidal's device plugin gives pods the GPUs chosen (docs/traces.md measures
      // the weight; with NVIDIA's plugin packing raised OOM kills).
      {"fgd", "fragmentation gradient descent (Weng et al., ATC'23)", NewFgd, true, 0.25,
       "{tasks: learned, wholeGpuScoreStep: 3, onlyWithTidalDevicePlugin: true, fillPlan: "
       "workload}"},
  };
  return entries;
}

const PluginEntry* FindPlugin(const std::string& name) {
  for (const auto& e : Registry())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace tidal
