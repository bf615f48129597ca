#include "sim/trace_policies.h"

#include "policy/plugins/balance/balance.h"
#include "policy/plugins/bestfitmilli/bestfitmilli.h"
#include "policy/plugins/dotprod/dotprod.h"
#include "policy/plugins/fgd/fgd.h"
#include "policy/plugins/gpuclustering/gpuclustering.h"
#include "policy/plugins/gpupacking/gpupacking.h"
#include "policy/plugins/loadaware/loadaware.h"
#include "policy/plugins/milligpu/milligpu.h"
#include "policy/plugins/random/random.h"
#include "tidal/core/status.h"
#include "tidal/policy/milli_gpu.h"
#include "tidal/policy/registry.h"

namespace tidal::sim {

namespace {

std::unique_ptr<Plugin> FromRegistry(PluginFactory make, const char* yaml,
                                     const std::string& path) {
  ConfigErrors errors;
  auto p = make(YAML::Load(yaml), path, errors);
  if (!p) throw InputError{errors.Joined()};
  return p;
}

}  // namespace

std::unique_ptr<Runner> MakeTracePolicy(const std::string& policy,
                                        const std::vector<std::string>& known,
                                        const std::string& experiment,
                                        const std::vector<FgdTask>& tasks, std::uint64_t seed) {
  bool listed = false;
  for (const auto& k : known) listed = listed || k == policy;
  std::vector<Runner::WeightedPlugin> plugins;
  // The FGD authors' Random gives a sharing pod a random GPU of the node
  // (gpuSelMethod random); the other baselines get the best-fit GPU.
  MilliGpuArgs fit;
  if (policy == "random") {
    fit.pick = GpuPick::kRandom;
    fit.seed = seed;
  }
  plugins.push_back({std::make_unique<MilliGpu>(fit), 1});
  if (!listed) {
    // Falls through to the error below.
  } else if (policy == "random") {
    plugins.push_back({std::make_unique<RandomScore>(RandomArgs{seed}), 1});
  } else if (policy == "dot-prod") {
    plugins.push_back({std::make_unique<DotProd>(), 1});
  } else if (policy == "gpu-clustering") {
    plugins.push_back({std::make_unique<GpuClustering>(), 1});
  } else if (policy == "gpu-packing") {
    plugins.push_back({std::make_unique<GpuPacking>(), 1});
  } else if (policy == "best-fit") {
    plugins.push_back({std::make_unique<BestFitMilli>(), 1});
  } else if (policy == "fgd") {
    plugins.push_back({std::make_unique<Fgd>(FgdArgs{tasks}), 1});
  } else if (policy == "load-aware-frag" || policy == "load-aware-frag-pack") {
    // Tidal's load-aware filter and band score, FGD's fragmentation score (with
    // -pack: equal FGD scores go to the node left fullest), balance's spread below
    // the warning band. Where no node has live load (openb: the views are unknown,
    // see FgdExperiment::Run) loadaware and balance score every node 50 and reject
    // none, so FGD's score (and its tie-break) decides.
    plugins.push_back({FromRegistry(NewLoadAware, "{}", "loadaware"), 2});
    FgdArgs fgd{tasks};
    if (policy == "load-aware-frag-pack") fgd.tie_break = FgdTieBreak::kPack;
    plugins.push_back({std::make_unique<Fgd>(std::move(fgd)), 1});
    plugins.push_back({FromRegistry(NewBalance, "{mode: spread}", "balance"), 1});
  } else if (policy == "load-aware-spread" || policy == "load-aware-pack") {
    plugins.push_back({FromRegistry(NewLoadAware, "{}", "loadaware"), 1});
    plugins.push_back(
        {FromRegistry(NewBalance, policy == "load-aware-pack" ? "{mode: pack}" : "{mode: spread}",
                      "balance"),
         1});
  } else {
    listed = false;
  }
  if (!listed) {
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    throw InputError{"policy \"" + policy + "\": unknown for " + experiment + " (expected one of " +
                     list + ")"};
  }
  return std::make_unique<Runner>(DefaultPolicyConfig(), std::move(plugins));
}

NodeState TraceNodeView(const std::string& name, std::int64_t cpu_milli, std::int64_t memory_mib,
                        int gpus, const std::string& model) {
  NodeState v;
  v.name = name;
  v.cpu_milli_allocatable = cpu_milli;
  v.memory_allocatable = Bytes{memory_mib} * kTraceMiB;
  v.allocatable_gpus = gpus;
  for (int g = 0; g < gpus; ++g) {
    Gpu gpu;
    gpu.index = g;
    gpu.model = model;
    gpu.memory_total = kMilliPerGpu * kTraceMiB;
    v.gpus.push_back(gpu);
  }
  v.Finalize();
  return v;
}

void ApplyTracePod(NodeState* node, const PodDemand& pod, const GpuSet& gpus, int sign) {
  node->cpu_milli_requested += sign * pod.cpu_milli;
  node->memory_requested += sign * pod.memory_request;
  for (int g : gpus.Indices()) {
    node->gpus[g].milli_free -= sign * pod.gpu_milli;
    node->gpus[g].memory_used += sign * Bytes{pod.gpu_milli} * kTraceMiB;
  }
  node->gpus_requested += sign * pod.gpu_count;
  node->Finalize();
}

}  // namespace tidal::sim
