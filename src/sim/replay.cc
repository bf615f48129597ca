#include "tidal/sim/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "sim/scheduling.h"
#include "sim/trace_policies.h"
#include "tidal/core/status.h"
#include "tidal/policy/milli_gpu.h"
#include "tidal/sim/engine.h"
#include "tidal/sim/fgd_experiment.h"

namespace tidal::sim {

// The learning and look-ahead policies only where pods arrive one at a time
// (fgd-inflation): the replay's fgd already takes its target workload from the
// jobs, and its queue is not one pod after another.
const std::vector<std::string>& ReplayPolicyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& p : FgdPolicyNames())
      if (!FgdPolicyLearns(p) && !FgdPolicyLooksAhead(p)) n.push_back(p);
    return n;
  }();
  return names;
}

ReplayStats Summarise(std::vector<double> v) {
  ReplayStats s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(k, 1, v.size()) - 1];
  };
  s.p50 = rank(0.50);
  s.p99 = rank(0.99);
  return s;
}

std::vector<ReplayJob> FromPhilly(const std::vector<traces::PhillyJob>& jobs) {
  std::vector<ReplayJob> out;
  out.reserve(jobs.size());
  for (const auto& j : jobs)
    out.push_back({"philly-" + std::to_string(j.line), static_cast<double>(j.submit_s),
                   j.duration_s, j.gpus, j.vc});
  return out;
}

std::vector<ReplayVc> FromPhilly(const std::vector<traces::PhillyVc>& vcs) {
  std::vector<ReplayVc> out;
  for (const auto& v : vcs) out.push_back({v.name, v.nodes});
  return out;
}

namespace {

// Philly has no CPU or memory columns: nodes get a nominal size, jobs ask for none.
constexpr std::int64_t kNodeCpuMilli = 64'000;
constexpr std::int64_t kNodeMemoryMib = 262'144;
constexpr int kKinds = 64;  // NodeState::gpu_pod_kinds bits

struct Vc {
  std::vector<NodeState> views;
  std::vector<const NodeState*> ptrs;
  std::vector<std::uint32_t> version;
  std::vector<std::array<int, kKinds>> kinds;  // pods per kind bit, per node
  std::map<int, Verdicts> verdicts;            // by the pod's GPU count
  std::vector<int> pending;                    // job indices in arrival order; −1: started
  std::size_t head = 0;
  std::size_t holes = 0;
  bool cycle_queued = false;
  std::int64_t allocated = 0;
  double gpu_ms = 0;
};

struct Job {
  int vc = -1;
  std::vector<PodDemand> pods;  // one per node it needs: 8 GPUs each, the remainder last
  std::vector<std::pair<int, GpuSet>> placed;
  TimeMs submit_ms = 0, start_ms = 0;
};

class Replayer {
 public:
  Replayer(const std::vector<ReplayVc>& vcs, const std::vector<ReplayJob>& jobs,
           const std::string& policy, const ReplayOptions& o)
      : jobs_in_(jobs), o_(o), tie_rng_(o.seed ^ 0x7265706cULL) {
    if (vcs.empty()) throw InputError{"philly replay: the VC table is empty"};
    if (o.gpus_per_node <= 0 || o.gpus_per_node > kMaxGpusPerNode)
      throw InputError{"philly replay: GPUs per node must be 1.." +
                       std::to_string(kMaxGpusPerNode)};
    result_.policy = policy;
    result_.jobs = static_cast<int>(jobs.size());
    std::map<std::string, int> vc_index;
    for (const auto& v : vcs) {
      Vc vc;
      for (int n = 0; n < v.nodes; ++n)
        vc.views.push_back(TraceNodeView(fmt::format("{}-node-{:03}", v.name, n), kNodeCpuMilli,
                                         kNodeMemoryMib, o.gpus_per_node, "philly"));
      vc.version.assign(vc.views.size(), 1);
      vc.kinds.assign(vc.views.size(), {});
      vc_index[v.name] = static_cast<int>(vcs_.size());
      result_.vcs.push_back({v.name, 0, 0, {}, 0});
      vc_gpus_.push_back(v.nodes * o.gpus_per_node);
      result_.total_gpus += v.nodes * o.gpus_per_node;
      vcs_.push_back(std::move(vc));
    }
    // Pointers into each VC's views, taken once the VCs no longer move.
    for (auto& vc : vcs_) {
      vc.ptrs.clear();
      for (const auto& view : vc.views) vc.ptrs.push_back(&view);
    }
    t0_s_ = jobs.empty() ? 0 : jobs.front().submit_s;
    for (const auto& j : jobs) t0_s_ = std::min(t0_s_, j.submit_s);
    jobs_.resize(jobs.size());
    std::vector<PodDemand> all_pods;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const ReplayJob& in = jobs[i];
      Job& job = jobs_[i];
      const auto it = vc_index.find(in.vc);
      if (it == vc_index.end()) {
        ++result_.skipped_no_vc;
        continue;
      }
      if (in.gpus <= 0 || in.gpus > vc_gpus_[it->second]) {
        ++result_.skipped_too_big;
        continue;
      }
      job.vc = it->second;
      job.submit_ms = std::llround((in.submit_s - t0_s_) * 1000.0);
      for (int left = in.gpus, k = 0; left > 0; left -= o.gpus_per_node, ++k) {
        // Philly has no CPU or memory columns: the pods ask for whole GPUs alone.
        const PodDemand d =
            TracePod(in.id + (in.gpus > o.gpus_per_node ? "-" + std::to_string(k) : ""),
                     std::to_string(i) + "/" + std::to_string(k), 0, 0,
                     std::min(left, o.gpus_per_node), kMilliPerGpu);
        job.pods.push_back(d);
        all_pods.push_back(d);
      }
    }
    cache_ = o.cache_by_shape && policy != "random";
    std::vector<FgdTask> tasks = TypicalTasks(all_pods, 100);
    // No pod to place (every job skipped): fgd's args need a task type, and which
    // one cannot matter; its default, a whole GPU.
    if (tasks.empty()) tasks.push_back({0, 1, kMilliPerGpu, {}, 1.0});
    runner_ = MakeTracePolicy(policy, ReplayPolicyNames(), "philly", tasks, o.seed);
  }

  ReplayResult Run() {
    finish_ms_.assign(jobs_.size(), -1);
    for (std::size_t i = 0; i < jobs_.size(); ++i)
      if (jobs_[i].vc >= 0) engine_.At(jobs_[i].submit_ms, [this, i] { Arrive(i); });
    engine_.Run(std::numeric_limits<TimeMs>::max());
    Advance(engine_.now());
    result_.makespan_s = static_cast<double>(last_completion_ms_) / 1000.0;
    const double cap = static_cast<double>(result_.total_gpus);
    if (result_.makespan_s > 0 && cap > 0)
      result_.util_mean = gpu_ms_ / (1000.0 * result_.makespan_s * cap);
    const double bucket_ms = o_.util_bucket_s * 1000.0;
    for (std::size_t b = 0; b < bucket_gpu_ms_.size(); ++b) {
      const double start = static_cast<double>(b) * bucket_ms;
      const double len = std::min(bucket_ms, static_cast<double>(last_completion_ms_) - start);
      if (len <= 0) break;
      result_.util.push_back(bucket_gpu_ms_[b] / (len * cap));
    }
    result_.events = engine_.events_run();
    for (std::size_t v = 0; v < vcs_.size(); ++v) {
      ReplayVcResult& out = result_.vcs[v];
      out.gpus = vc_gpus_[v];
      if (result_.makespan_s > 0 && out.gpus > 0)
        out.util_mean = vcs_[v].gpu_ms / (1000.0 * result_.makespan_s * out.gpus);
    }
    // Per completed job, in trace order.
    for (std::size_t i = 0; i < jobs_.size(); ++i)
      if (finish_ms_[i] >= 0) {
        result_.queue_s.push_back(static_cast<double>(jobs_[i].start_ms - jobs_[i].submit_ms) /
                                  1000.0);
        result_.jct_s.push_back(static_cast<double>(finish_ms_[i] - jobs_[i].submit_ms) / 1000.0);
        ReplayVcResult& vc = result_.vcs[static_cast<std::size_t>(jobs_[i].vc)];
        vc.queue_s.push_back(result_.queue_s.back());
        ++vc.completed;
      }
    result_.completed = static_cast<int>(result_.jct_s.size());
    return result_;
  }

 private:
  void Arrive(std::size_t j) {
    Vc& vc = vcs_[jobs_[j].vc];
    vc.pending.push_back(static_cast<int>(j));
    RequestCycle(jobs_[j].vc);
  }

  void RequestCycle(int v) {
    if (vcs_[v].cycle_queued) return;
    vcs_[v].cycle_queued = true;
    // After every event already queued for this instant: one cycle sees them all.
    engine_.At(engine_.now(), [this, v] { Cycle(v); });
  }

  // kube-scheduler tries the pending pods in queue order; a job of g GPUs that
  // does not fit means none of g or more fits (whole GPUs, no CPU or memory
  // requests), so those are skipped until the next cycle.
  void Cycle(int v) {
    Vc& vc = vcs_[v];
    vc.cycle_queued = false;
    int min_failed = std::numeric_limits<int>::max();
    for (std::size_t i = vc.head; i < vc.pending.size() && min_failed > 1; ++i) {
      const int j = vc.pending[i];
      if (j < 0) continue;
      const int gpus = jobs_in_[j].gpus;
      if (gpus >= min_failed) continue;
      if (TryPlace(static_cast<std::size_t>(j))) {
        Start(static_cast<std::size_t>(j));
        vc.pending[i] = -1;
        ++vc.holes;
      } else {
        min_failed = gpus;
      }
    }
    while (vc.head < vc.pending.size() && vc.pending[vc.head] < 0) {
      ++vc.head;
      --vc.holes;
    }
    if (vc.holes > 1024 && vc.holes * 2 > vc.pending.size() - vc.head) {
      std::vector<int> live;
      for (std::size_t i = vc.head; i < vc.pending.size(); ++i)
        if (vc.pending[i] >= 0) live.push_back(vc.pending[i]);
      vc.pending = std::move(live);
      vc.head = 0;
      vc.holes = 0;
    }
  }

  // The node the policy picks for `pod`, or −1: the highest score, ties uniformly
  // at random as kube-scheduler's selectHost does. Only nodes changed since a pod
  // of this many GPUs last looked are scored again.
  int Choose(Vc& vc, const PodDemand& pod) {
    Verdicts* v = &scratch_;
    if (cache_) {
      v = &vc.verdicts[pod.gpu_count];
    } else {
      v->version.clear();
    }
    const std::size_t n_nodes = vc.views.size();
    if (v->version.size() != n_nodes) v->Reset(n_nodes);
    dirty_.clear();
    dirty_index_.clear();
    v->ForEachStale(vc.version, [&](std::size_t n) {
      dirty_.push_back(vc.ptrs[n]);
      dirty_index_.push_back(n);
    });
    if (!dirty_.empty()) {
      runner_->Evaluate(pod, dirty_, RunOptions{false, false}, &eval_, &eval_scratch_);
      result_.node_evaluations += dirty_.size();
      for (std::size_t k = 0; k < dirty_.size(); ++k)
        v->Store(dirty_index_[k], vc.version[dirty_index_[k]], eval_.nodes[k]);
    }
    const int chosen = SelectHost(v->ok.data(), v->score.data(), FirstIndices{n_nodes},
                                  TieBreak::kReservoir, tie_rng_);
    if (chosen >= 0) chosen_gpus_ = v->gpus[chosen];
    return chosen;
  }

  // All of a job's pods or none (a gang): placed pods are taken back on failure.
  bool TryPlace(std::size_t j) {
    Job& job = jobs_[j];
    Vc& vc = vcs_[job.vc];
    job.placed.clear();
    for (const PodDemand& pod : job.pods) {
      const int n = Choose(vc, pod);
      if (n < 0 || chosen_gpus_.Count() != pod.gpu_count) {
        for (std::size_t k = job.placed.size(); k-- > 0;)
          Change(vc, job.placed[k].first, job.pods[k], job.placed[k].second, -1);
        job.placed.clear();
        return false;
      }
      job.placed.emplace_back(n, chosen_gpus_);
      Change(vc, n, pod, chosen_gpus_, +1);
    }
    return true;
  }

  void Change(Vc& vc, int n, const PodDemand& pod, const GpuSet& gpus, int sign) {
    Advance(engine_.now());
    NodeState& node = vc.views[n];
    ApplyTracePod(&node, pod, gpus, sign);
    const int bit = std::countr_zero(GpuPodKind(pod));
    vc.kinds[n][bit] += sign;
    node.gpu_pod_kinds = 0;
    for (int b = 0; b < kKinds; ++b)
      if (vc.kinds[n][b] > 0) node.gpu_pod_kinds |= std::uint64_t{1} << b;
    ++vc.version[n];
    allocated_ += sign * pod.gpu_count;
    vc.allocated += sign * pod.gpu_count;
  }

  void Start(std::size_t j) {
    Job& job = jobs_[j];
    job.start_ms = engine_.now();
    std::vector<int> nodes;
    for (const auto& p : job.placed) nodes.push_back(p.first);
    std::sort(nodes.begin(), nodes.end());
    const bool multi = std::unique(nodes.begin(), nodes.end()) - nodes.begin() > 1;
    if (multi) ++result_.multi_node;
    const double factor = multi ? o_.multi_node_slowdown : 1.0;
    const auto run_ms =
        static_cast<TimeMs>(std::ceil(jobs_in_[j].duration_s * factor * 1000.0 - 1e-6));
    engine_.After(std::max<TimeMs>(run_ms, 0), [this, j] { Finish(j); });
  }

  void Finish(std::size_t j) {
    Job& job = jobs_[j];
    Vc& vc = vcs_[job.vc];
    for (std::size_t k = 0; k < job.placed.size(); ++k)
      Change(vc, job.placed[k].first, job.pods[k], job.placed[k].second, -1);
    job.placed.clear();
    finish_ms_[j] = engine_.now();
    last_completion_ms_ = std::max(last_completion_ms_, engine_.now());
    RequestCycle(job.vc);
  }

  // Integrates the allocated GPUs up to `now`, overall and per bucket.
  void Advance(TimeMs now) {
    if (now <= last_ms_) return;
    const double alloc = static_cast<double>(allocated_);
    gpu_ms_ += alloc * static_cast<double>(now - last_ms_);
    for (Vc& vc : vcs_)
      vc.gpu_ms += static_cast<double>(vc.allocated) * static_cast<double>(now - last_ms_);
    const double bucket_ms = o_.util_bucket_s * 1000.0;
    double t = static_cast<double>(last_ms_);
    const double end = static_cast<double>(now);
    while (t < end && bucket_ms > 0) {
      const auto b = static_cast<std::size_t>(t / bucket_ms);
      const double stop = std::min(end, static_cast<double>(b + 1) * bucket_ms);
      if (bucket_gpu_ms_.size() <= b) bucket_gpu_ms_.resize(b + 1, 0);
      bucket_gpu_ms_[b] += alloc * (stop - t);
      t = stop;
    }
    last_ms_ = now;
  }

  const std::vector<ReplayJob>& jobs_in_;
  ReplayOptions o_;
  Engine engine_;
  Random tie_rng_;
  std::unique_ptr<Runner> runner_;
  bool cache_ = true;
  std::vector<Vc> vcs_;
  std::vector<int> vc_gpus_;
  std::vector<Job> jobs_;
  std::vector<TimeMs> finish_ms_;
  double t0_s_ = 0;
  ReplayResult result_;
  Verdicts scratch_;
  Evaluation eval_;
  EvaluationScratch eval_scratch_;
  std::vector<const NodeState*> dirty_;
  std::vector<std::size_t> dirty_index_;
  GpuSet chosen_gpus_;
  std::int64_t allocated_ = 0;
  TimeMs last_ms_ = 0, last_completion_ms_ = 0;
  double gpu_ms_ = 0;
  std::vector<double> bucket_gpu_ms_;
};

}  // namespace

ReplayResult Replay(const std::vector<ReplayVc>& vcs, const std::vector<ReplayJob>& jobs,
                    const std::string& policy, const ReplayOptions& options) {
  Replayer r(vcs, jobs, policy, options);
  return r.Run();
}

namespace {
std::string Stats(const ReplayStats& s) {
  return fmt::format("{{\"mean\": {:.1f}, \"p50\": {:.1f}, \"p99\": {:.1f}}}", s.mean, s.p50,
                     s.p99);
}
}  // namespace

std::string RenderReplayJson(const std::vector<ReplayResult>& results,
                             const std::vector<double>& events_per_s) {
  std::string out = "{\n  \"experiment\": \"philly\",\n  \"policies\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ReplayResult& r = results[i];
    out += i ? ",\n    {" : "\n    {";
    out += fmt::format(
        "\"name\": \"{}\", \"jobs\": {}, \"completed\": {}, \"skipped_no_vc\": {}, "
        "\"skipped_too_big\": {}, \"multi_node\": {}, \"gpus\": {}, \"queue_s\": {}, "
        "\"jct_s\": {}, \"makespan_s\": {:.1f}, \"util_mean\": {:.4f}, \"events\": {}, "
        "\"node_evaluations\": {}",
        r.policy, r.jobs, r.completed, r.skipped_no_vc, r.skipped_too_big, r.multi_node,
        r.total_gpus, Stats(Summarise(r.queue_s)), Stats(Summarise(r.jct_s)), r.makespan_s,
        r.util_mean, r.events, r.node_evaluations);
    if (i < events_per_s.size()) out += fmt::format(", \"events_per_s\": {:.0f}", events_per_s[i]);
    out += ", \"vcs\": [";
    for (std::size_t v = 0; v < r.vcs.size(); ++v) {
      const ReplayVcResult& vc = r.vcs[v];
      out += fmt::format(
          "{}{{\"name\": \"{}\", \"gpus\": {}, \"completed\": {}, \"queue_s\": {}, "
          "\"util_mean\": {:.4f}}}",
          v ? ", " : "", vc.name, vc.gpus, vc.completed, Stats(Summarise(vc.queue_s)),
          vc.util_mean);
    }
    out += "], \"util\": [";
    for (std::size_t b = 0; b < r.util.size(); ++b)
      out += fmt::format("{}{:.4f}", b ? ", " : "", r.util[b]);
    out += "]}";
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string RenderReplayTable(const std::vector<ReplayResult>& results,
                              const std::vector<double>& events_per_s) {
  std::string out;
  if (!results.empty()) {
    const ReplayResult& r = results.front();
    out += fmt::format(
        "philly replay: {} jobs ({} skipped: VC not in the VC table {}, larger than its VC {}), "
        "{} GPUs\n\n",
        r.jobs, r.skipped_no_vc + r.skipped_too_big, r.skipped_no_vc, r.skipped_too_big,
        r.total_gpus);
  }
  out += fmt::format("{:<18} {:>9} {:>9} {:>10} | {:>9} {:>9} {:>10} | {:>6} {:>9} {:>10} {:>10}\n",
                     "policy", "queue", "queue50", "queue99", "JCT", "JCT50", "JCT99", "util",
                     "done", "events", "events/s");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ReplayResult& r = results[i];
    const ReplayStats q = Summarise(r.queue_s), j = Summarise(r.jct_s);
    out += fmt::format(
        "{:<18} {:>9.0f} {:>9.0f} {:>10.0f} | {:>9.0f} {:>9.0f} {:>10.0f} | {:>5.1f}% {:>9} "
        "{:>10} {:>10}\n",
        r.policy, q.mean, q.p50, q.p99, j.mean, j.p50, j.p99, 100 * r.util_mean, r.completed,
        r.events, i < events_per_s.size() ? fmt::format("{:.0f}", events_per_s[i]) : "-");
  }
  // Queueing by VC: the mean queue of each VC's jobs (columns: the VCs).
  if (!results.empty() && !results.front().vcs.empty()) {
    out += "\nmean queue (s) per VC (GPUs, time-weighted utilisation under the first policy)\n";
    out += fmt::format("{:<18}", "policy");
    for (const auto& vc : results.front().vcs) out += fmt::format(" {:>8}", vc.name);
    out += fmt::format("\n{:<18}", "  GPUs");
    for (const auto& vc : results.front().vcs) out += fmt::format(" {:>8}", vc.gpus);
    out += fmt::format("\n{:<18}", "  util");
    for (const auto& vc : results.front().vcs) out += fmt::format(" {:>7.1f}%", 100 * vc.util_mean);
    out += "\n";
    for (const auto& r : results) {
      out += fmt::format("{:<18}", r.policy);
      for (const auto& vc : r.vcs) out += fmt::format(" {:>8.0f}", Summarise(vc.queue_s).mean);
      out += "\n";
    }
  }
  out +=
      "\nqueue: submit to start, JCT: submit to completion, in seconds (mean, p50, p99 by "
      "nearest rank);\nutil: allocated GPUs over the cluster's, time-weighted from the first "
      "submit to the last completion.\n";
  return out;
}

}  // namespace tidal::sim
