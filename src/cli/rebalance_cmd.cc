// tidal rebalance: plan (and with --execute, carry out) moves of movable pods
// off nodes that stay overloaded; dry run by default (docs/rebalance.md).
#include <signal.h>

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/daemon_signals.h"
#include "tidal/kube/client.h"
#include "tidal/kube/config.h"
#include "tidal/metrics/snapshot.h"
#include "tidal/policy/config.h"
#include "tidal/rebalance/rebalancer.h"

namespace tidal::cli {
namespace {

struct RebalanceFlags {
  std::string prometheus;
  std::string prometheus_ca, prometheus_token_file;
  std::string node_label = "node";
  std::string config;
  bool in_cluster = false;
  std::string kubeconfig, kube_context;
  bool dry_run = false, execute = false, loop = false;
  std::string interval = "1m";
  std::string sustain = "10m", step = "1m", max_sample_age = "2m", max_gap = "3m";
  std::string cooldown = "30m", gain_horizon = "30m", default_startup = "60s";
  double lscs_limit = 0.15, min_gain_over_cost = 1.0;
  int max_moves = 2;
};

TimeMs Duration(const std::string& flag, const std::string& text) {
  const auto ms = ParseDurationMs(text);
  if (!ms || *ms < 0)
    throw InputError{flag + " " + text + ": expected a duration such as 10m, 90s or 500ms"};
  return *ms;
}

int RunRebalance(const RebalanceFlags& f) {
  if (f.dry_run && f.execute) throw InputError{"--dry-run and --execute: choose one"};
  if (f.in_cluster == !f.kubeconfig.empty())
    throw InputError{
        "--in-cluster or --kubeconfig: give exactly one (the pods, nodes and budgets come from the "
        "Kubernetes API)"};
  rebalance::RebalancerOptions o;
  rebalance::PlannerConfig& p = o.planner;
  p.sustain_ms = Duration("--sustain", f.sustain);
  p.max_sample_age_ms = Duration("--max-sample-age", f.max_sample_age);
  p.max_gap_ms = Duration("--max-gap", f.max_gap);
  p.cooldown_ms = Duration("--cooldown", f.cooldown);
  p.gain_horizon_ms = Duration("--gain-horizon", f.gain_horizon);
  p.default_startup_ms = Duration("--default-startup", f.default_startup);
  p.lscs_limit = f.lscs_limit;
  p.min_gain_over_cost = f.min_gain_over_cost;
  p.max_moves = f.max_moves;
  o.history_step_ms = Duration("--step", f.step);
  const TimeMs interval = Duration("--interval", f.interval);
  std::vector<std::string> errors = rebalance::Validate(p);
  if (o.history_step_ms <= 0 || o.history_step_ms > p.max_gap_ms)
    errors.push_back("--step " + f.step + ": expected a duration above zero and at most --max-gap");
  if (f.loop && interval < 1000)
    errors.push_back("--interval " + f.interval + ": expected 1s or more");
  if (!errors.empty()) {
    std::string msg = "rebalance settings:";
    for (const auto& e : errors) msg += "\n  " + e;
    throw InputError{msg};
  }
  const Runner policy(f.config.empty() ? DefaultPolicyConfig() : LoadPolicyConfigFile(f.config));
  prom::ClientOptions po;
  po.url = f.prometheus;
  po.timeout_ms = policy.config().query_timeout_ms;
  po.ca_file = f.prometheus_ca;
  po.bearer_token_file = f.prometheus_token_file;
  // The configured exporters, as tidal serve reads them (docs/metrics-sources.md).
  PrometheusSource source(std::make_unique<prom::PrometheusClient>(po), f.node_label,
                          policy.config().metrics_source);
  kube::KubeClient api(f.in_cluster
                           ? kube::InClusterEndpoint(kube::ProcessEnv(), kube::kServiceAccountDir)
                           : kube::LoadKubeconfig(f.kubeconfig, f.kube_context));
  SystemClock clock;
  std::unique_ptr<rebalance::Evictor> evictor;
  // The eviction rate limit: --max-moves per --interval, whatever the plans say.
  if (f.execute)
    evictor = std::make_unique<rebalance::Evictor>(api, clock, std::max(1, p.max_moves),
                                                   std::max<TimeMs>(interval, 1000));
  IgnoreBrokenPipes();
  rebalance::Rebalancer r(policy, source, api, clock, evictor.get(), o);
  if (!f.loop) {
    const rebalance::Round round = r.RunOnce();
    std::cout << rebalance::FormatRound(round, f.execute) << std::flush;
    return round.status.ok() ? 0 : 2;
  }
  // Long-running: a round every interval until SIGINT or SIGTERM.
  const sigset_t sigs = TakeStopSignals();
  for (;;) {
    const rebalance::Round round = r.RunOnce();
    std::cout << rebalance::FormatRound(round, f.execute) << std::flush;
    timespec wait{static_cast<time_t>(interval / 1000),
                  static_cast<long>(interval % 1000) * 1'000'000};
    if (sigtimedwait(&sigs, nullptr, &wait) > 0) return 0;
  }
}

}  // namespace

void AddRebalance(CLI::App& app) {
  auto f = std::make_shared<RebalanceFlags>();
  CLI::App* cmd = app.add_subcommand(
      "rebalance",
      "move movable pods (tidal.io/migratable: \"true\") off nodes that stay above a reject "
      "threshold, or while LSCS stays high; prints the plan (dry run) unless --execute");
  cmd->add_option("--prometheus", f->prometheus, "Prometheus (or compatible) query API base URL")
      ->required();
  cmd->add_option("--prometheus-ca", f->prometheus_ca,
                  "CA file to verify an https Prometheus with");
  cmd->add_option("--prometheus-token-file", f->prometheus_token_file,
                  "bearer token file for Prometheus (re-read on every query)");
  cmd->add_option("--node-label", f->node_label, "label of the agents' series naming the node")
      ->capture_default_str();
  cmd->add_option("--config", f->config,
                  "policy config (YAML) the targets are judged with; default: the built-in one");
  cmd->add_flag("--in-cluster", f->in_cluster, "use the pod's service account");
  cmd->add_option("--kubeconfig", f->kubeconfig, "kubeconfig file");
  cmd->add_option("--context", f->kube_context, "kubeconfig context (default: its current one)");
  cmd->add_flag("--dry-run", f->dry_run, "print the plan only (the default)");
  cmd->add_flag("--execute", f->execute, "evict the planned pods through the Eviction API");
  cmd->add_flag("--loop", f->loop, "run a round every --interval until stopped");
  cmd->add_option("--interval", f->interval,
                  "time between rounds with --loop; also the window "
                  "of the eviction rate limit")
      ->capture_default_str();
  cmd->add_option("--sustain", f->sustain, "how long a trigger must hold")->capture_default_str();
  cmd->add_option("--step", f->step, "metrics history: one instant query per step")
      ->capture_default_str();
  cmd->add_option("--max-sample-age", f->max_sample_age, "a node's sample older than this is stale")
      ->capture_default_str();
  cmd->add_option("--max-gap", f->max_gap, "a longer hole in the history breaks a trigger")
      ->capture_default_str();
  cmd->add_option("--lscs-limit", f->lscs_limit, "LSCS (fraction) that triggers when sustained")
      ->capture_default_str();
  cmd->add_option("--max-moves", f->max_moves, "moves per round (and per --interval)")
      ->capture_default_str();
  cmd->add_option("--cooldown", f->cooldown,
                  "a pod or controller moved, or a pod started, this recently is not moved")
      ->capture_default_str();
  cmd->add_option("--gain-horizon", f->gain_horizon,
                  "the most remaining run time a move's gain counts")
      ->capture_default_str();
  cmd->add_option("--min-gain-over-cost", f->min_gain_over_cost,
                  "move only when the gain is at least this times the restart's cost")
      ->capture_default_str();
  cmd->add_option("--default-startup", f->default_startup,
                  "start-up time of pods without tidal.io/startup-seconds")
      ->capture_default_str();
  cmd->callback([f]() {
    const int rc = RunRebalance(*f);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tidal::cli
