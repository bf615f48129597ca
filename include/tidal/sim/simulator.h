#pragma once
// The cluster simulator: replays a workload on a cluster under one policy, with
// the runtime model of docs/simulator.md, calling the same policy code the
// extender runs.
#include <map>
#include <string>
#include <vector>

#include "tidal/metrics/reservations.h"
#include "tidal/policy/config.h"
#include "tidal/rebalance/planner.h"
#include "tidal/sim/spec.h"

namespace tidal::sim {

enum class PolicyKind {
  kK8sDefault,  // kube-scheduler: NodeResourcesFit LeastAllocated + BalancedAllocation
  kBestFit,     // kube-scheduler with bin-packing on requested GPUs
  kLoadAware,   // kube-scheduler + Tidal's extender on lagged metrics
  kOracle,      // kube-scheduler + Tidal's extender on perfect, instant metrics
};

struct PolicySpec {
  std::string name;
  PolicyKind kind = PolicyKind::kK8sDefault;
  PolicyConfig tidal;        // the extender's policy config
  bool reservations = true;  // docs/design.md#reservations
  int extender_weight = 5;   // as in deploy/scheduler's KubeSchedulerConfiguration
  // load-aware+rebalance: `tidal rebalance --loop --execute` beside the extender,
  // planning on what Prometheus has every interval (docs/rebalance.md).
  bool rebalance = false;
  rebalance::PlannerConfig rebalance_config;
  TimeMs rebalance_interval_ms = 60'000;
  // `+stock-dp`: the nodes run NVIDIA's stock device plugin, which ignores
  // tidal.io/gpus: the extender still chooses the node and writes its GPUs there
  // (and counts them in its slots and reservations), but the pod gets the
  // least-shared GPUs. Without it, Tidal's device plugin gives the annotated GPUs.
  // The baselines write no annotation: they get the least-shared GPUs either way.
  bool stock_device_plugin = false;
};

// The suffix that deploys a policy with Tidal's extender on the stock device plugin.
inline constexpr const char* kStockDevicePluginSuffix = "+stock-dp";

// Parses a policy name: k8s-default, best-fit, load-aware, load-aware-noreserve,
// load-aware-forecast, load-aware-learn, load-aware-predict, load-aware+rebalance,
// oracle; any but the two baselines may end in +stock-dp.
PolicySpec MakePolicy(const std::string& name, const PolicyConfig& tidal);

struct SimOptions {
  std::uint64_t seed = 42;
  TimeMs agent_interval_ms = 10'000;
  TimeMs scrape_interval_ms = 15'000;
  TimeMs cache_ttl_ms = 20'000;
  bool warm_metrics = true;           // a first sample of the initial state is cached at t = 0
  TimeMs tick_ms = 1'000;             // runtime model step
  TimeMs retry_interval_ms = 30'000;  // pending pods are retried at least this often
  TimeMs stats_interval_ms = 10'000;
  TimeMs lscs_window_ms = 300'000;  // LSCS uses 5-minute averages
  TimeMs horizon_ms = 48LL * 3600 * 1000;
};

struct TimePoint {
  double t_s = 0;
  std::vector<double> node_memory;  // true GPU-memory utilisation per node
  double lscs = 0;                  // over 5-minute averages
  int pending = 0;
  int running = 0;
};

struct PolicyResult {
  std::string name;
  std::vector<std::string> nodes;
  std::vector<double>
      waits_s;  // per completed task: time not running (pending, back-off), all attempts
  std::vector<double> jcts_s;  // per completed task: completion − first arrival
  double makespan_s = 0;
  int oom_kills = 0;
  int evictions = 0;       // rebalancing moves (load-aware+rebalance only)
  double work_lost_s = 0;  // progress the moved tasks lost (back to their last checkpoint)
  bool rebalance = false;  // the policy rebalances: the report shows the fields above
  struct MoveRecord {
    double t_s = 0;
    std::string pod, from, to;
    std::string trigger;  // why its node was a source
    // What the planner expected: the pod's gain and the move's cost (GPU·s), its
    // slowdown at the source and the target, over how much remaining run time.
    double gain_gpu_s = 0, cost_gpu_s = 0;
    double slowdown_from = 1, slowdown_to = 1;
    double remaining_s = 0;
  };
  std::vector<MoveRecord> moves;  // the rebalancer's evictions, in order
  int starts = 0;
  int completed = 0;
  int pending_at_end = 0;
  int running_at_end = 0;
  int tasks = 0;
  double lscs_max = 0;
  double lscs_settle_s =
      -1;  // from the last arrival until LSCS stays <= 15 % while busy; -1: never
  double nvlink_variance_max = 0;
  std::map<std::string, double> gpu_mem_util_peak;
  std::map<std::string, double> gpu_mem_util_mean;
  std::map<std::string, int> starts_per_node;  // pods started on each node, restarts included
  int max_pods_per_gpu = 0;                    // most pods sharing one GPU at once
  double max_gpu_overcommit = 0;               // highest Σ real memory / capacity seen on any GPU
  double tasks_per_hour = 0;
  std::uint64_t events = 0;
  std::vector<TimePoint> series;
};

PolicyResult Simulate(const ClusterSpec& cluster, const WorkloadSpec& workload,
                      const PolicySpec& policy, const SimOptions& options);

}  // namespace tidal::sim
