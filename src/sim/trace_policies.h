#pragma once
// The placement policies of the trace experiments (fgd-inflation, philly): each is
// a Runner over plugins, `milligpu` (CPU, memory, GPU model and milli-GPU fit)
// plus the policy's score plugin, the same plugin code the extender runs, built
// as a config file builds it: through the registry, from YAML args.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/policy/fragmentation.h"
#include "tidal/policy/runner.h"

namespace tidal::sim {

// openb has no usage, so the GPU memory Tidal's load-aware plugins see is the
// requested share: 1 milli-GPU is shown as 1 MiB of a 1000 MiB GPU.
inline constexpr Bytes kTraceMiB = Bytes{1} << 20;

// load-aware-frag-ahead's fgd wholeGpuScoreStep: measured on the four openb lists
// with the look-ahead, 2, 3, 4 and 5; 3 was best (docs/traces.md).
inline constexpr int kWholeGpuScoreStep = 3;

// random, dot-prod, gpu-clustering, gpu-packing, best-fit-milli, fgd, load-aware-spread,
// load-aware-pack, load-aware-frag, load-aware-frag-pack, load-aware-frag-ahead,
// load-aware-frag-learned, load-aware-frag-learned-ahead and fgd-learned,
// fgd-lookahead (scored as fgd), and fgd-fill (fgd with `fill_plan` as its fillPlan
// arg). Throws InputError naming `experiment` on an unknown policy.
std::unique_ptr<Runner> MakeTracePolicy(const std::string& policy,
                                        const std::vector<std::string>& known,
                                        const std::string& experiment,
                                        const std::vector<FgdTask>& tasks, std::uint64_t seed,
                                        int fgd_score_step = 1,
                                        const YAML::Node& fill_plan = YAML::Node());

// `milligpu` alone with its defaults: the fit every trace policy starts with.
std::unique_ptr<Runner> MakeTraceFit();

// A node of `gpus` GPUs of `model` (each 1000 milli-GPU), nothing placed.
NodeState TraceNodeView(const std::string& name, std::int64_t cpu_milli, std::int64_t memory_mib,
                        int gpus, const std::string& model);

// A trace's pod: its CPU and memory requests, and `gpus` GPUs of `gpu_milli`
// milli-GPU each, its share declared as its GPU memory need (kTraceMiB per
// milli-GPU) as Tidal's load-aware plugins read it. A CPU-only pod declares none.
PodDemand TracePod(const std::string& name, const std::string& uid, std::int64_t cpu_milli,
                   std::int64_t memory_mib, int gpus, int gpu_milli);
// TracePod's fields set on `*d`, whose name, uid and models the caller sets
// (reusing their storage: a loop over millions of pods allocates nothing).
void SetTracePodRequests(PodDemand* d, std::int64_t cpu_milli, std::int64_t memory_mib, int gpus,
                         int gpu_milli);

// Adds (sign +1) or removes (sign −1) a pod's requests on `gpus` of the node; the
// caller keeps gpu_pod_kinds (a removal cannot know which kinds remain).
void ApplyTracePod(NodeState* node, const PodDemand& pod, const GpuSet& gpus, int sign);

}  // namespace tidal::sim
