#include "tidal/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>

#include "sim/device_plugin.h"
#include "sim/metrics_pipeline.h"
#include "sim/model.h"
#include "sim/scheduling.h"
#include "sim/statistics.h"
#include "sim/trace_policies.h"
#include "tidal/core/status.h"
#include "tidal/policy/cycle.h"
#include "tidal/policy/forecast.h"
#include "tidal/policy/learned_workload.h"
#include "tidal/policy/memory_learner.h"
#include "tidal/policy/runner.h"
#include "tidal/rebalance/pods.h"
#include "tidal/sim/engine.h"

namespace tidal::sim {

namespace {

PolicySpec MakeBasePolicy(const std::string& name, const PolicyConfig& tidal) {
  PolicySpec p;
  p.name = name;
  p.tidal = tidal;
  if (name == "k8s-default")
    p.kind = PolicyKind::kK8sDefault;
  else if (name == "best-fit")
    p.kind = PolicyKind::kBestFit;
  else if (name == "load-aware") {
    p.kind = PolicyKind::kLoadAware;
    p.reservations = tidal.reservations.enabled;  // reservations.enabled in the config
  } else if (name == "load-aware-forecast" || name == "load-aware-learn" ||
             name == "load-aware-predict") {
    // The reactive load-aware policy plus the prediction (docs/design.md#prediction): the load
    // forecast, the learned memory estimates, or both.
    p.kind = PolicyKind::kLoadAware;
    p.reservations = tidal.reservations.enabled;
    if (name != "load-aware-learn") p.tidal.load_forecast.enabled = true;
    if (name != "load-aware-forecast") p.tidal.memory_learning.enabled = true;
  } else if (name == "load-aware-frag" || name == "load-aware-frag-ahead") {
    // The configured load-aware profile plus FGD's fragmentation score
    // (src/sim/trace_policies.cc has the same policies for the trace runs; the
    // look-ahead of -ahead is fgd-inflation's, where pods come one at a time).
    p.kind = PolicyKind::kLoadAware;
    p.reservations = tidal.reservations.enabled;
    bool has_fgd = false;
    for (const auto& pc : p.tidal.plugins) has_fgd = has_fgd || pc.name == "fgd";
    if (!has_fgd)
      p.tidal.plugins.push_back(
          {"fgd", true, 1,
           name == "load-aware-frag-ahead"
               ? "{wholeGpuScoreStep: " + std::to_string(kWholeGpuScoreStep) + "}"
               : ""});
  } else if (name == "load-aware+rebalance") {
    p.kind = PolicyKind::kLoadAware;
    p.reservations = tidal.reservations.enabled;
    p.rebalance = true;
  } else if (name == "load-aware-noreserve") {
    p.kind = PolicyKind::kLoadAware;
    p.reservations = false;
  } else if (name == "oracle")
    p.kind = PolicyKind::kOracle;
  else if (name == "best-fit-milli")
    throw InputError{
        "policy \"best-fit-milli\": the FGD paper's BestFit, for --experiment fgd-inflation or "
        "philly; the seed simulator's bin-packing baseline is best-fit"};
  else
    throw InputError{"policy \"" + name +
                     "\": unknown (expected k8s-default, best-fit, load-aware, load-aware-frag, "
                     "load-aware-frag-ahead, "
                     "load-aware-noreserve, load-aware-forecast, load-aware-learn, "
                     "load-aware-predict, load-aware+rebalance "
                     "or oracle, the ones with Tidal's extender optionally ending in +stock-dp)"};
  return p;
}

bool UsesExtender(PolicyKind kind) {
  return kind == PolicyKind::kLoadAware || kind == PolicyKind::kOracle;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

PolicySpec MakePolicy(const std::string& name, const PolicyConfig& tidal) {
  const std::string suffix = kStockDevicePluginSuffix;
  if (!EndsWith(name, suffix)) return MakeBasePolicy(name, tidal);
  PolicySpec p = MakeBasePolicy(name.substr(0, name.size() - suffix.size()), tidal);
  // A baseline row already is the stock plugin's: a second, identical row would
  // suggest a difference that is not there.
  if (p.kind == PolicyKind::kK8sDefault || p.kind == PolicyKind::kBestFit)
    throw InputError{"policy \"" + name + "\": " + p.name +
                     " writes no tidal.io/gpus, so its pods get the device plugin's "
                     "least-shared GPUs with any plugin; drop " +
                     suffix};
  p.name = name;
  p.stock_device_plugin = true;
  return p;
}

namespace {

// GPU `g` of a node as its spec and the replicas held on it (`held`) show it.
Gpu GpuOf(const NodeSpec& s, int g, int held) {
  Gpu gpu;
  gpu.index = g;
  gpu.model = s.gpu_model;
  gpu.memory_total = s.gpu_memory;
  gpu.SetFreeSlots(std::max(0, s.replicas_per_gpu - held));
  for (int h = 0; h < s.gpu_count; ++h)
    if (s.links[g][h] > 0) gpu.nvlink_peers.push_back({h, s.links[g][h]});
  return gpu;
}

class Simulation {
 public:
  Simulation(const ClusterSpec& cluster, const WorkloadSpec& workload, const PolicySpec& policy,
             const SimOptions& options)
      : policy_(policy),
        opt_(options),
        tie_rng_(options.seed ^ 0x7469646c),
        book_(ReservationOptions{policy.tidal.reservations.visible_after_ms,
                                 policy.tidal.reservations.ttl_ms,
                                 policy.tidal.reservations.claims}),
        model_(cluster, tasks_),
        metrics_(model_, tasks_, policy.tidal.nvlink),
        stats_(model_, static_cast<std::size_t>(std::max<TimeMs>(
                           1, options.lscs_window_ms / options.stats_interval_ms))),
        scheduler_(policy.tidal, policy.kind == PolicyKind::kBestFit,
                   UsesExtender(policy.kind) ? &policy.tidal : nullptr, policy.extender_weight) {
    MakeTasks(workload);
    BuildPrediction();
  }

  PolicyResult Run() {
    // The monitoring stack ran before the scenario starts: the extender's cache
    // holds a sample of the initial state at t = 0 (without it, pods arriving in
    // the first seconds meet nodes without metrics, judged by GPU counts alone).
    if (opt_.warm_metrics) {
      metrics_.Sample(engine_.now());
      metrics_.Scrape();
      metrics_.Refresh();
      ObserveForecast();
    }
    for (const Task& t : tasks_) {
      const int id = t.id;
      engine_.At(t.arrival_ms, [this, id] { Arrive(id); });
    }
    // The metrics pipeline: agent, then scrape, then the extender's cache, each on
    // its own period; the phases make the worst-case lag their sum.
    Every(0, opt_.agent_interval_ms, [this] { metrics_.Sample(engine_.now()); });
    Every(opt_.scrape_interval_ms / 3, opt_.scrape_interval_ms, [this] { metrics_.Scrape(); });
    Every(opt_.cache_ttl_ms / 2, opt_.cache_ttl_ms, [this] {
      metrics_.Refresh();
      ObserveForecast();
    });
    Every(0, opt_.tick_ms, [this] { Tick(); });
    Every(opt_.stats_interval_ms, opt_.stats_interval_ms, [this] { Stats(); });
    Every(opt_.retry_interval_ms, opt_.retry_interval_ms, [this] { RequestCycle(); });
    if (policy_.rebalance)
      Every(policy_.rebalance_interval_ms, policy_.rebalance_interval_ms, [this] { Rebalance(); });
    engine_.Run(opt_.horizon_ms);
    return Finish();
  }

 private:
  // A periodic event; the simulation owns the loop (a self-capturing closure would leak).
  void Every(TimeMs first, TimeMs period, std::function<void()> fn) {
    loops_.push_back(std::make_unique<std::function<void()>>());
    std::function<void()>* loop = loops_.back().get();
    *loop = [this, period, fn, loop] {
      fn();
      if (!AllDone()) engine_.After(period, [loop] { (*loop)(); });
    };
    engine_.At(first, [loop] { (*loop)(); });
  }

  const std::vector<NodeRt>& nodes() const { return model_.nodes(); }

  bool AllDone() const { return done_ == static_cast<int>(tasks_.size()); }

  void MakeTasks(const WorkloadSpec& w) {
    Random rng(opt_.seed);
    for (const auto& cls : w.classes) {
      TimeMs t = cls.arrival_start_ms;
      for (int i = 0; i < cls.count; ++i) {
        Task task;
        task.id = static_cast<int>(tasks_.size());
        task.cls = &cls;
        if (cls.arrival == "burst")
          task.arrival_ms =
              cls.arrival_start_ms +
              static_cast<TimeMs>(rng.Uniform() * static_cast<double>(cls.arrival_window_ms));
        else
          task.arrival_ms = t +=
              static_cast<TimeMs>(rng.Exponential(static_cast<double>(cls.mean_gap_ms)));
        task.duration_s = rng.Uniform(cls.duration_seconds.lo, cls.duration_seconds.hi);
        task.peak = static_cast<Bytes>(rng.Uniform(cls.memory_peak.lo, cls.memory_peak.hi));
        task.ramp_s = rng.Uniform(cls.ramp_seconds.lo, cls.ramp_seconds.hi);
        // Drawn after the others, so that classes without profiles keep their numbers.
        if (cls.memory_profiles && !w.profiles.empty())
          task.profile = &w.profiles[rng.Below(w.profiles.size())];
        PodDemand& p = task.pod;
        p.namespace_name = "ml";
        p.name = cls.name + "-" + std::to_string(i);
        p.gpu_count = cls.gpus;
        p.cpu_milli = cls.cpu_milli;
        p.memory_request = cls.memory_request;
        p.load_type = cls.load_type;
        p.images = {cls.image};
        p.nvlink_required = cls.nvlink_required;
        if (cls.declared_memory) {
          p.gpu_memory_per_gpu = *cls.declared_memory;
          p.gpu_memory_declared = true;
        }
        task.estimate = cls.gpus > 0 ? EstimateMemoryNeed(policy_.tidal.memory_estimate, p) : 0;
        tasks_.push_back(std::move(task));
      }
    }
    for (const Task& t : tasks_) last_arrival_ms_ = std::max(last_arrival_ms_, t.arrival_ms);
  }

  // The extender's prediction (docs/design.md#prediction), when the policy enables
  // it: the load forecaster and the learned memory estimates.
  void BuildPrediction() {
    if (policy_.kind == PolicyKind::kLoadAware && policy_.tidal.load_forecast.enabled)
      forecaster_ = std::make_unique<LoadForecaster>(policy_.tidal.load_forecast);
    // The extender learns the GPU workload from the pods it filters (fgd's `tasks:
    // learned`); here each pod as it arrives, which is when its first cycle comes.
    const WorkloadLearnerUse use = UseOfWorkloadLearner(policy_.tidal);
    learns_workload_ = scheduler_.extender() && use.workload;
    if (scheduler_.extender() && use.any()) scheduler_.extender()->SetLearnedWorkload(&workload_);
    if (scheduler_.extender() && policy_.tidal.memory_learning.enabled) {
      learner_ = std::make_unique<MemoryLearner>(policy_.tidal.memory_learning);
      scheduler_.extender()->SetLearnedMemory(learner_.get());
    }
  }

  // The extender's forecaster reads each new cached sample, as the refresher does.
  void ObserveForecast() {
    if (!forecaster_) return;
    for (std::size_t n = 0; n < nodes().size(); ++n) {
      const NodeSample& c = metrics_.cache()[n];
      if (!c.present) continue;
      NodeState v;
      const NodeSpec& s = *nodes()[n].spec;
      for (int g = 0; g < s.gpu_count; ++g) {
        Gpu gpu;
        gpu.index = g;
        gpu.memory_total = s.gpu_memory;
        gpu.memory_used = c.used[g];
        gpu.nvlink_utilization = c.nvlink_util[g];
        v.gpus.push_back(std::move(gpu));
      }
      v.storage_await_ms = c.await_ms;
      v.nvlink_competition = c.competition;
      v.Finalize();
      forecaster_->Observe(s.name, c.at, v.load);
    }
  }

  // ---- events ----

  void Arrive(int id) {
    Task& t = tasks_[id];
    if (learns_workload_) workload_.Observe(t.pod);
    t.state = Task::State::kPending;
    t.pending_since_ms = engine_.now();
    t.queued_ms = engine_.now();
    RequestCycle();
  }

  void Requeue(int id) {
    Task& t = tasks_[id];
    t.state = Task::State::kPending;
    t.queued_ms = engine_.now();
    RequestCycle();
  }

  void RequestCycle() {
    if (cycle_requested_) return;
    cycle_requested_ = true;
    engine_.After(0, [this] {
      cycle_requested_ = false;
      ScheduleCycle();
    });
  }

  // The runtime model, one step, node by node: progress (finished tasks
  // complete), then memory (over-committed GPUs kill their newest tenants).
  void Tick() {
    const TimeMs now = engine_.now();
    const double dt = static_cast<double>(opt_.tick_ms) / 1000.0;
    for (std::size_t n = 0; n < nodes().size(); ++n) {
      for (int id : model_.Advance(n, now, dt)) Complete(id);
      for (int g = 0; g < nodes()[n].spec->gpu_count; ++g) {
        for (;;) {
          double usage = 0;
          const int victim = model_.OomVictim(n, g, now, &usage);
          stats_.ObserveGpuUsage(usage);
          if (victim < 0) break;
          OomKill(victim);
        }
      }
    }
  }

  void Release(Task& t) {
    model_.Remove(t);
    book_.Remove(t.pod.Key());
    t.node = -1;
    t.gpus.clear();
    t.named_gpus.clear();
  }

  void Complete(int id) {
    Task& t = tasks_[id];
    // What the agent saw the pod peak at, for the next pods of its workload.
    if (learner_ && t.cls->gpus > 0) learner_->Observe(WorkloadKey(t.pod), t.peak);
    Release(t);
    t.state = Task::State::kDone;
    t.done_ms = engine_.now();
    ++done_;
    waits_.push_back(t.waited_s);
    jcts_.push_back(static_cast<double>(t.done_ms - t.arrival_ms) / 1000.0);
    RequestCycle();
    if (AllDone()) engine_.Stop();
  }

  void OomKill(int id) {
    Task& t = tasks_[id];
    Release(t);
    ++oom_kills_;
    // The pod restarts from its beginning. Its Job controller recreates a failed
    // pod after an exponential back-off (10 s, 20 s, 40 s, … capped at 6 min).
    t.state = Task::State::kWaiting;
    t.pending_since_ms = engine_.now();
    t.progress_s = 0;
    const TimeMs backoff = std::min<TimeMs>(360'000, 10'000LL << std::min(t.failures, 6));
    ++t.failures;
    engine_.After(backoff, [this, id] { Requeue(id); });
  }

  // A rebalancing move: the Eviction API deletes the pod and its Job controller
  // recreates it at once (an eviction is a disruption, not a failure: no
  // back-off). It resumes from its last checkpoint and pays its start-up again.
  void Evict(int id) {
    Task& t = tasks_[id];
    Release(t);
    ++evictions_;
    const double c = t.cls->checkpoint_ms ? static_cast<double>(*t.cls->checkpoint_ms) / 1000 : 0;
    const double kept = c > 0 ? std::floor(t.progress_s / c) * c : 0;
    work_lost_s_ += t.progress_s - kept;
    t.progress_s = kept;
    t.pending_since_ms = engine_.now();
    Requeue(id);
  }

  // What Prometheus holds of every node now (the scraped samples), as the
  // rebalancer fetches it.
  MetricsSnapshot ScrapedSnapshot(TimeMs now) const {
    MetricsSnapshot snap;
    snap.fetched_at_ms = now;
    for (std::size_t n = 0; n < nodes().size(); ++n) {
      const NodeSample& smp = metrics_.scraped()[n];
      if (!smp.present) continue;
      const NodeSpec& s = *nodes()[n].spec;
      const std::vector<int> held = HeldAsNamed(n);  // as the rebalancer's pod list says
      NodeMetrics m;
      for (int g = 0; g < s.gpu_count; ++g) {
        Gpu gpu = GpuOf(s, g, held[g]);
        gpu.memory_used = smp.used[g];
        gpu.nvlink_utilization = smp.nvlink_util[g];
        m.gpus.push_back(std::move(gpu));
      }
      m.storage_await_ms = smp.await_ms;
      m.nvlink_competition = smp.competition;
      m.sample_time_ms = smp.at;
      snap.nodes[s.name] = std::move(m);
    }
    return snap;
  }

  // A running task as the rebalancer's pod list shows it: its annotations say
  // what the workload declares, never the task's drawn duration or IO share.
  static rebalance::PodInfo RebalancePod(const Task& t, const std::string& node) {
    rebalance::PodInfo p;
    p.demand = t.pod;
    auto& annotations = p.demand.annotations;
    if (t.cls->migratable) annotations[std::string(rebalance::kMigratableAnnotation)] = "true";
    if (t.cls->checkpoint_ms)
      annotations[std::string(rebalance::kCheckpointIntervalAnnotation)] =
          std::to_string(*t.cls->checkpoint_ms) + "ms";
    annotations[std::string(rebalance::kStartupAnnotation)] =
        std::to_string(t.cls->startup_ms) + "ms";
    if (t.cls->expected_duration_ms)
      annotations[std::string(rebalance::kExpectedDurationAnnotation)] =
          std::to_string(*t.cls->expected_duration_ms) + "ms";
    if (t.cls->declared_io_share)
      annotations[std::string(rebalance::kIoShareAnnotation)] =
          fmt::format("{}", *t.cls->declared_io_share);
    GpuSet named;  // a time-sliced pod may hold two replicas of one GPU
    for (int g : NamedOrGiven(t)) named.Add(g);
    std::string gpus;
    for (int g : named.Indices()) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    annotations[std::string(kAnnotationGpus)] = gpus;
    p.node = node;
    p.phase = "Running";
    p.owner = "Job/" + t.pod.name;
    p.started_ms = t.started_ms;
    return p;
  }

  // One round of the rebalancer on what Prometheus holds (the scraped samples),
  // with the extender's policy for targets.
  void Rebalance() {
    const TimeMs now = engine_.now();
    history_.push_back(ScrapedSnapshot(now));
    const auto& cfg = policy_.rebalance_config;
    while (!history_.empty() && history_.front().fetched_at_ms < now - cfg.sustain_ms)
      history_.pop_front();
    rebalance::PlanInput in;
    in.now_ms = now;
    in.snapshots.assign(history_.begin(), history_.end());
    for (const auto& n : nodes()) {
      KubeNode api;
      api.name = n.spec->name;
      api.labels = n.spec->labels;
      api.allocatable_gpus = n.spec->gpu_count * n.spec->replicas_per_gpu;
      in.nodes.push_back(std::move(api));
    }
    std::vector<int> ids;
    for (const auto& n : nodes())
      for (int id : n.tasks) {
        if (tasks_[id].cls->gpus <= 0) continue;
        in.pods.push_back(RebalancePod(tasks_[id], n.spec->name));
        ids.push_back(id);
      }
    in.moved_at_ms = moved_at_;
    const rebalance::Plan plan = rebalance::MakePlan(*scheduler_.extender(), cfg, in);
    for (const auto& m : plan.moves) {
      for (std::size_t k = 0; k < in.pods.size(); ++k)
        if (in.pods[k].Key() == m.pod) {
          Evict(ids[k]);
          break;
        }
      moved_at_[m.pod] = now;
      moved_at_[m.owner_key] = now;
      moves_.push_back({static_cast<double>(now) / 1000.0, m.pod, m.from, m.to, m.trigger,
                        m.gain_gpu_s, m.cost_gpu_s, m.slowdown_from, m.slowdown_to,
                        static_cast<double>(m.remaining_ms) / 1000.0});
    }
  }

  void Stats() {
    int pending = 0, running = 0;
    for (const Task& t : tasks_) {
      pending += t.state == Task::State::kPending ? 1 : 0;
      running += t.state == Task::State::kRunning ? 1 : 0;
    }
    stats_.Sample(engine_.now(), pending, running);
  }

  // ---- scheduling ----

  NodeState View(std::size_t n) const {
    const NodeRt& rt = nodes()[n];
    const NodeSpec& s = *rt.spec;
    const TimeMs now = engine_.now();
    NodeState v;
    v.name = s.name;
    v.labels = s.labels;
    v.allocatable_gpus = s.gpu_count * s.replicas_per_gpu;
    v.cpu_milli_allocatable = s.cpu_milli;
    v.memory_allocatable = s.memory;
    // The extender counts device slots by tidal.io/gpus; the oracle knows the truth.
    const std::vector<int> held =
        policy_.kind == PolicyKind::kLoadAware ? HeldAsNamed(n) : HeldReally(n);
    for (int id : rt.tasks) {
      v.gpus_requested += tasks_[id].cls->gpus;
      v.cpu_milli_requested += tasks_[id].cls->cpu_milli;
      v.memory_requested += tasks_[id].cls->memory_request;
    }
    for (int g = 0; g < s.gpu_count; ++g) v.gpus.push_back(GpuOf(s, g, held[g]));
    if (policy_.kind == PolicyKind::kLoadAware) {
      const NodeSample& c = metrics_.cache()[n];
      v.metrics_known = c.present;
      if (c.present) {
        for (int g = 0; g < s.gpu_count; ++g) {
          v.gpus[g].memory_used = c.used[g];
          v.gpus[g].nvlink_utilization = c.nvlink_util[g];
        }
        v.storage_await_ms = c.await_ms;
        v.nvlink_competition = c.competition;
        v.sample_time_ms = c.at;
      }
      v.Finalize();
      if (forecaster_ && c.present) {
        if (const auto f = forecaster_->Predict(s.name, now)) {
          v.load_trend = {f->gpu_memory - v.load.gpu_memory, f->nvlink - v.load.nvlink,
                          f->await_ms - v.load.await_ms};
          v.has_load_trend = true;
        }
      }
      if (policy_.reservations) book_.ApplyTo(v, policy_.tidal.nvlink.slots_per_gpu);
    } else if (policy_.kind == PolicyKind::kOracle) {
      // Perfect, instant metrics, plus what each running pod will still grow into.
      for (int g = 0; g < s.gpu_count; ++g) {
        Bytes used = 0;
        for (int id : rt.tenants[g])
          used += std::max(tasks_[id].MemoryAt(now), tasks_[id].estimate);
        v.gpus[g].memory_used = used;
        v.gpus[g].nvlink_utilization = rt.nvlink_util[g];
      }
      v.storage_await_ms = rt.await_ms;
      v.nvlink_competition = metrics_.Competition(n);
      v.sample_time_ms = now;
      v.Finalize();
    } else {
      v.Finalize();  // request-based policies see no usage
    }
    return v;
  }

  void ScheduleCycle() {
    const TimeMs now = engine_.now();
    if (policy_.kind == PolicyKind::kLoadAware && policy_.reservations) {
      std::map<std::string, TimeMs> sample_times;
      for (std::size_t n = 0; n < nodes().size(); ++n)
        if (metrics_.cache()[n].present)
          sample_times[nodes()[n].spec->name] = metrics_.cache()[n].at;
      book_.Expire(now, sample_times);
    }
    std::vector<int> queue;
    for (const Task& t : tasks_)
      if (t.state == Task::State::kPending) queue.push_back(t.id);
    std::stable_sort(queue.begin(), queue.end(),
                     [&](int a, int b) { return tasks_[a].queued_ms < tasks_[b].queued_ms; });
    if (queue.empty()) return;
    std::vector<NodeState> views;
    for (std::size_t n = 0; n < nodes().size(); ++n) views.push_back(View(n));
    SupplyWorkload(views);
    // A class that did not fit stays unfit until something is placed in this cycle.
    std::vector<const TaskClass*> failed;
    const auto unfit = [&](int id) {
      return std::find(failed.begin(), failed.end(), tasks_[id].cls) != failed.end();
    };
    for (std::size_t at = 0; at < queue.size(); ++at) {
      Task& t = tasks_[queue[at]];
      if (unfit(queue[at])) continue;
      // The next pod kube-scheduler's queue holds: tidal serve's look-ahead sees it.
      const auto next = std::find_if(queue.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                                     queue.end(), [&](int id) { return !unfit(id); });
      const auto choice = scheduler_.Decide(t.pod, views, tie_rng_,
                                            next == queue.end() ? nullptr : &tasks_[*next].pod);
      std::vector<int> gpus;
      if (!choice || !GiveGpus(t, choice->node, choice->named_gpus, &gpus)) {
        failed.push_back(t.cls);
        continue;
      }
      // Tidal's device plugin gave the named GPUs: the extender sees the pod's
      // tidal.io/gpus-allocated.
      if (GivesNamedGpus(choice->named_gpus)) workload_.NoteGpuChoiceCarriedOut();
      Bind(t, choice->node, gpus, choice->named_gpus,
           choice->memory_need_per_gpu.value_or(t.estimate));
      views[choice->node] = View(choice->node);
      failed.clear();
    }
  }

  // The learned workload is weighed by scarcity over the nodes as the extender
  // sees them (as tidal serve supplies each view it builds), once per cycle.
  void SupplyWorkload(const std::vector<NodeState>& views) {
    if (!learns_workload_) return;
    std::vector<const NodeState*> nodes;
    for (const NodeState& v : views) nodes.push_back(&v);
    workload_.Supply(nodes);
  }

  // What the node's device plugin gives the pod: Tidal's plugin the GPUs named in
  // tidal.io/gpus; the stock plugin, and any plugin for a pod with no annotation,
  // replicas of the least-shared GPUs by what the node really holds.
  bool GiveGpus(const Task& t, int node, const std::vector<int>& named,
                std::vector<int>* gpus) const {
    if (GivesNamedGpus(named)) {
      *gpus = named;
      return true;
    }
    auto given = LeastSharedGpus(HeldReally(static_cast<std::size_t>(node)),
                                 nodes()[node].spec->replicas_per_gpu, t.cls->gpus);
    if (!given) return false;
    *gpus = std::move(*given);
    return true;
  }

  bool GivesNamedGpus(const std::vector<int>& named) const {
    return !named.empty() && !policy_.stock_device_plugin;
  }

  // Replicas held per GPU on the node: what its device plugin counts.
  std::vector<int> HeldReally(std::size_t n) const { return model_.Held(n); }

  // Replicas held per GPU as the extender and the rebalancer count them, from the
  // pods' tidal.io/gpus: with Tidal's device plugin the same as HeldReally.
  std::vector<int> HeldAsNamed(std::size_t n) const {
    std::vector<int> held(nodes()[n].tenants.size(), 0);
    for (int id : nodes()[n].tasks)
      for (int g : NamedOrGiven(tasks_[id])) ++held[g];
    return held;
  }

  // The GPUs the extender takes a pod to hold: those it named, or, for a pod it
  // placed without naming any, those the device plugin gave.
  static const std::vector<int>& NamedOrGiven(const Task& t) {
    return t.named_gpus.empty() ? t.gpus : t.named_gpus;
  }

  void Bind(Task& t, int node, const std::vector<int>& gpus, const std::vector<int>& named,
            Bytes estimate) {
    const TimeMs now = engine_.now();
    t.state = Task::State::kRunning;
    t.node = node;
    t.gpus = gpus;
    t.named_gpus = named;
    t.started_ms = now;
    t.waited_s += static_cast<double>(now - t.pending_since_ms) / 1000.0;
    ++starts_;
    model_.Place(t);
    const NodeRt& rt = nodes()[node];
    ++starts_per_node_[rt.spec->name];
    for (int g : gpus) stats_.ObservePodsPerGpu(static_cast<int>(rt.tenants[g].size()));
    if (policy_.kind == PolicyKind::kLoadAware && policy_.reservations) {
      Reservation r;
      r.pod = t.pod.Key();
      r.node = rt.spec->name;
      for (int g : NamedOrGiven(t)) r.gpus.Add(g);  // what /bind reserved, followed or not
      r.memory_per_gpu = estimate;
      r.uses_nvlink = PodUsesNvlink(policy_.tidal.nvlink, t.pod);
      r.placed_at_ms = now;
      book_.Add(std::move(r));
    }
  }

  PolicyResult Finish() {
    PolicyResult r;
    r.name = policy_.name;
    r.tasks = static_cast<int>(tasks_.size());
    r.waits_s = waits_;
    r.jcts_s = jcts_;
    r.oom_kills = oom_kills_;
    r.evictions = evictions_;
    r.work_lost_s = work_lost_s_;
    r.rebalance = policy_.rebalance;
    r.moves = moves_;
    r.starts = starts_;
    r.completed = done_;
    for (const Task& t : tasks_) {
      r.makespan_s = std::max(r.makespan_s, static_cast<double>(t.done_ms) / 1000.0);
      r.pending_at_end += t.state == Task::State::kPending ? 1 : 0;
      r.running_at_end += t.state == Task::State::kRunning ? 1 : 0;
    }
    if (!AllDone()) r.makespan_s = static_cast<double>(engine_.now()) / 1000.0;
    for (const auto& n : nodes()) {
      const std::string& name = n.spec->name;
      r.nodes.push_back(name);
      r.starts_per_node[name] = starts_per_node_.count(name) ? starts_per_node_.at(name) : 0;
    }
    stats_.Fill(last_arrival_ms_, &r);
    r.tasks_per_hour = r.makespan_s > 0 ? r.completed / (r.makespan_s / 3600.0) : 0;
    r.events = engine_.events_run();
    return r;
  }

  const PolicySpec& policy_;
  SimOptions opt_;
  Engine engine_;
  Random tie_rng_;
  ReservationBook book_;
  std::vector<Task> tasks_;
  RuntimeModel model_;
  MetricsPipeline metrics_;
  RunStatistics stats_;
  KubeScheduler scheduler_;
  std::unique_ptr<LoadForecaster> forecaster_;
  std::unique_ptr<MemoryLearner> learner_;
  WorkloadLearner workload_;
  bool learns_workload_ = false;
  bool cycle_requested_ = false;
  int done_ = 0, oom_kills_ = 0, starts_ = 0, evictions_ = 0;
  double work_lost_s_ = 0;
  std::deque<MetricsSnapshot> history_;     // the rebalancer's metrics history
  std::map<std::string, TimeMs> moved_at_;  // the rebalancer's moves, for its cooldown
  std::vector<PolicyResult::MoveRecord> moves_;
  std::map<std::string, int> starts_per_node_;
  TimeMs last_arrival_ms_ = 0;
  std::vector<double> waits_, jcts_;
  std::vector<std::unique_ptr<std::function<void()>>> loops_;
};

}  // namespace

PolicyResult Simulate(const ClusterSpec& cluster, const WorkloadSpec& workload,
                      const PolicySpec& policy, const SimOptions& options) {
  Simulation sim(cluster, workload, policy, options);
  return sim.Run();
}

}  // namespace tidal::sim
