#include "sim/trace_policies.h"

#include <yaml-cpp/yaml.h>

#include "tidal/core/status.h"
#include "tidal/policy/milli_gpu.h"
#include "tidal/policy/registry.h"

namespace tidal::sim {

namespace {

// The registry's plugin `name` built from `args`, as a config file's
// `plugins.<name>.args` would build it; a problem is an InputError.
std::unique_ptr<Plugin> FromRegistry(const std::string& name, const YAML::Node& args) {
  const PluginEntry* entry = FindPlugin(name);
  if (entry == nullptr) throw InputError{"plugin \"" + name + "\": not in the registry"};
  ConfigErrors errors;
  auto p = entry->make(args, name, errors);
  if (!p) throw InputError{errors.Joined()};
  return p;
}

// fgd's args (src/policy/plugins/fgd/README.md): the target workload as `tasks`
// (doubles are written with max_digits10, so the weights read back exactly) and
// the tie-break.
YAML::Node FgdArgsYaml(const std::vector<FgdTask>& tasks, bool pack, int score_step,
                       int whole_gpu_score_step = 0) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const FgdTask& t : tasks) {
    YAML::Node task(YAML::NodeType::Map);
    task["cpuMilli"] = t.cpu_milli;
    task["gpus"] = t.gpus;
    task["gpuMilli"] = t.gpu_milli;
    if (!t.models.empty()) {
      YAML::Node models(YAML::NodeType::Sequence);
      for (const auto& m : t.models) models.push_back(m);
      task["models"] = models;
    }
    task["weight"] = t.weight;
    list.push_back(task);
  }
  YAML::Node args(YAML::NodeType::Map);
  if (!tasks.empty()) args["tasks"] = list;  // none: the plugin's one whole GPU
  args["tieBreak"] = pack ? "pack" : "none";
  if (score_step != 1) args["scoreStep"] = score_step;
  if (whole_gpu_score_step != 0) args["wholeGpuScoreStep"] = whole_gpu_score_step;
  return args;
}

}  // namespace

std::unique_ptr<Runner> MakeTracePolicy(const std::string& policy,
                                        const std::vector<std::string>& known,
                                        const std::string& experiment,
                                        const std::vector<FgdTask>& tasks, std::uint64_t seed,
                                        int fgd_score_step, const YAML::Node& fill_plan) {
  bool listed = false;
  for (const auto& k : known) listed = listed || k == policy;
  std::vector<Runner::WeightedPlugin> plugins;
  // The FGD authors' Random gives a sharing pod a random GPU of the node
  // (gpuSelMethod random); the other baselines get the best-fit GPU.
  YAML::Node fit;
  if (policy == "random") {
    fit["gpuPick"] = "random";
    fit["seed"] = seed;
  }
  plugins.push_back({FromRegistry("milligpu", fit), 1});
  if (!listed) {
    // Falls through to the error below.
  } else if (policy == "random") {
    YAML::Node args;
    args["seed"] = seed;
    plugins.push_back({FromRegistry("random", args), 1});
  } else if (policy == "dot-prod") {
    plugins.push_back({FromRegistry("dotprod", YAML::Node()), 1});
  } else if (policy == "gpu-clustering") {
    plugins.push_back({FromRegistry("gpuclustering", YAML::Node()), 1});
  } else if (policy == "gpu-packing") {
    plugins.push_back({FromRegistry("gpupacking", YAML::Node()), 1});
  } else if (policy == "best-fit-milli") {
    plugins.push_back({FromRegistry("bestfitmilli", YAML::Node()), 1});
  } else if (policy == "fgd" || policy == "fgd-learned" || policy == "fgd-lookahead") {
    plugins.push_back({FromRegistry("fgd", FgdArgsYaml(tasks, false, fgd_score_step)), 1});
  } else if (policy == "fgd-fill") {
    // FGD, a sharing pod's GPU first where the plan puts its share (fill_plan).
    YAML::Node args = FgdArgsYaml(tasks, false, fgd_score_step);
    if (fill_plan && fill_plan.size() > 0) args["fillPlan"] = fill_plan;
    plugins.push_back({FromRegistry("fgd", args), 1});
  } else if (policy == "load-aware-frag" || policy == "load-aware-frag-pack" ||
             policy == "load-aware-frag-ahead" || policy == "load-aware-frag-learned" ||
             policy == "load-aware-frag-learned-ahead") {
    // Tidal's load-aware filter and band score, FGD's fragmentation score (with
    // -pack: equal FGD scores go to the node left fullest; with -ahead: pods of
    // whole GPUs scored in steps of kWholeGpuScoreStep, and the placement loop
    // looks ahead), balance's spread below the warning band. Where no node has
    // live load (openb: the views are unknown, see ClusterViews in
    // fgd_experiment.cc) loadaware and balance score every node 50 and reject
    // none, so FGD's score (and its tie-break) decides.
    plugins.push_back({FromRegistry("loadaware", YAML::Load("{}")), 2});
    const int whole_step = policy == "load-aware-frag-ahead" ||
                                   policy == "load-aware-frag-learned" ||
                                   policy == "load-aware-frag-learned-ahead"
                               ? kWholeGpuScoreStep
                               : 0;
    YAML::Node fgd =
        FgdArgsYaml(tasks, policy == "load-aware-frag-pack", fgd_score_step, whole_step);
    // What tidal serve runs plans how the learned shares fill GPUs (the default
    // profile's fillPlan: workload): here the plan of the relearned tasks.
    if (policy == "load-aware-frag-learned" || policy == "load-aware-frag-learned-ahead")
      fgd["fillPlan"] = "workload";
    plugins.push_back({FromRegistry("fgd", fgd), 1});
    plugins.push_back({FromRegistry("balance", YAML::Load("{mode: spread}")), 1});
  } else if (policy == "load-aware-spread" || policy == "load-aware-pack") {
    plugins.push_back({FromRegistry("loadaware", YAML::Load("{}")), 1});
    plugins.push_back(
        {FromRegistry("balance",
                      YAML::Load(policy == "load-aware-pack" ? "{mode: pack}" : "{mode: spread}")),
         1});
  } else {
    listed = false;
  }
  if (!listed && policy == "best-fit")
    throw InputError{"policy \"best-fit\": the seed simulator's (the bestfit plugin); for " +
                     experiment + " the FGD paper's BestFit is best-fit-milli"};
  if (!listed) {
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    throw InputError{"policy \"" + policy + "\": unknown for " + experiment + " (expected one of " +
                     list + ")"};
  }
  return std::make_unique<Runner>(DefaultPolicyConfig(), std::move(plugins));
}

std::unique_ptr<Runner> MakeTraceFit() {
  std::vector<Runner::WeightedPlugin> plugins;
  plugins.push_back({FromRegistry("milligpu", YAML::Node()), 1});
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

PodDemand TracePod(const std::string& name, const std::string& uid, std::int64_t cpu_milli,
                   std::int64_t memory_mib, int gpus, int gpu_milli) {
  PodDemand d;
  d.name = name;
  d.uid = uid;
  SetTracePodRequests(&d, cpu_milli, memory_mib, gpus, gpu_milli);
  return d;
}

void SetTracePodRequests(PodDemand* d, std::int64_t cpu_milli, std::int64_t memory_mib, int gpus,
                         int gpu_milli) {
  d->cpu_milli = cpu_milli;
  d->memory_request = Bytes{memory_mib} * kTraceMiB;
  d->gpu_count = gpus;
  d->gpu_milli = gpus > 0 ? gpu_milli : 0;
  d->gpu_memory_per_gpu = gpus > 0 ? Bytes{gpu_milli} * kTraceMiB : 0;
  d->gpu_memory_declared = gpus > 0;
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
