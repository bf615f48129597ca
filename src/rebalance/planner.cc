#include "tidal/rebalance/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "tidal/metrics/golden.h"
#include "tidal/policy/cycle.h"

namespace tidal::rebalance {
namespace {

std::string Dur(TimeMs ms) {
  if (ms < 0) ms = 0;
  if (ms % 3'600'000 == 0 && ms > 0) return fmt::format("{}h", ms / 3'600'000);
  if (ms % 60'000 == 0 && ms > 0) return fmt::format("{}m", ms / 60'000);
  if (ms >= 120'000) return fmt::format("{}m", (ms + 30'000) / 60'000);
  return fmt::format("{}s", (ms + 500) / 1000);
}

int Pct(double f) { return static_cast<int>(std::lround(f * 100)); }

// The node as the policy sees it: the API's labels and GPU count, the sample's loads.
NodeState MakeState(const KubeNode& api, const NodeMetrics& m) {
  NodeState s;
  s.name = api.name;
  s.labels = api.labels;
  s.allocatable_gpus = api.allocatable_gpus;
  s.gpus = m.gpus;
  s.storage_await_ms = m.storage_await_ms;
  s.nvlink_competition = m.nvlink_competition;
  s.sample_time_ms = m.sample_time_ms;
  s.metrics_known = true;
  s.Finalize();
  return s;
}

// Empty: the node's reading at this snapshot can be used; otherwise why not.
std::string Staleness(const MetricsSnapshot& snap, const std::string& node, TimeMs max_age_ms,
                      const NodeMetrics** out) {
  const auto it = snap.nodes.find(node);
  if (it == snap.nodes.end()) return "no series";
  const NodeMetrics& m = it->second;
  if (!m.usable)
    return "unusable reading" + (m.problems.empty() ? std::string() : ": " + m.problems.front());
  if (m.sample_time_ms <= 0) return "no sample time";
  const TimeMs age = snap.fetched_at_ms - m.sample_time_ms;
  if (age > max_age_ms) return fmt::format("sample {} old (limit {})", Dur(age), Dur(max_age_ms));
  *out = &m;
  return {};
}

// The dimension over its reject threshold, worded for people; empty: none.
std::string OverReject(const NodeState& s, const EffectiveThresholds& t) {
  if (s.load.gpu_memory > t.gpu_memory.reject)
    return fmt::format("GPU memory {}% > {}%", Pct(s.load.gpu_memory), Pct(t.gpu_memory.reject));
  if (s.load.await_ms > t.await_ms.reject)
    return fmt::format("storage await {:.1f} ms > {:.1f} ms", s.load.await_ms, t.await_ms.reject);
  if (s.load.nvlink > t.nvlink.reject)
    return fmt::format("NVLink {}% > {}%", Pct(s.load.nvlink), Pct(t.nvlink.reject));
  return {};
}

double NodeMemory(const NodeState& s) { return s.load.gpu_memory; }

double LscsOf(const std::map<std::string, NodeState>& states) {
  std::vector<double> u;
  for (const auto& [name, s] : states) u.push_back(NodeMemory(s));
  return Lscs(u);
}

// Moves `need` bytes per GPU off `from` (its GPUs, or the fullest) and onto `to`'s `gpus`.
void ApplyMove(NodeState* from, const GpuSet& from_gpus, int count, NodeState* to,
               const GpuSet& to_gpus, Bytes need) {
  std::vector<int> src = from_gpus.Indices();
  if (src.empty()) {
    std::vector<int> order(from->gpus.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return from->gpus[a].memory_used > from->gpus[b].memory_used;
    });
    order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(count)));
    src = order;
  }
  for (int pos : src) {
    if (pos < 0 || pos >= static_cast<int>(from->gpus.size())) continue;
    Gpu& g = from->gpus[pos];
    g.memory_used = std::max<Bytes>(0, g.memory_used - need);
    if (g.free_slots >= 0) ++g.free_slots;
  }
  for (int pos : to_gpus.Indices()) {
    if (pos >= static_cast<int>(to->gpus.size())) continue;
    Gpu& g = to->gpus[pos];
    g.memory_used += need;
    if (g.free_slots > 0) --g.free_slots;
  }
  from->Finalize();
  to->Finalize();
}

// One NVLink pod more (+1) or less (−1) in a node's competition index (NVLink
// pods / (GPUs × slots per GPU)).
void ShiftCompetition(NodeState* n, int nvlink_gpus, int slots_per_gpu, int sign) {
  if (nvlink_gpus <= 0 || slots_per_gpu <= 0 || n->gpus.empty()) return;
  const double one = 1.0 / (static_cast<double>(n->gpus.size()) * slots_per_gpu);
  n->nvlink_competition = std::max(0.0, n->nvlink_competition + sign * one);
  n->Finalize();
}

std::string DescribeSlowdown(const Slowdown& s, const NodeState& n, double io_share) {
  std::string out = fmt::format("{:.2f}×", s.total());
  std::vector<std::string> why;
  if (s.io > 1)
    why.push_back(fmt::format("storage await {:.0f} ms > {:.0f} ms, IO share {:.2f}",
                              n.storage_await_ms, kAwaitSlowdownMs, io_share));
  if (s.nvlink > 1) why.push_back(fmt::format("NVLink competition {:.2f}", n.nvlink_competition));
  if (!why.empty()) {
    out += " (";
    for (std::size_t i = 0; i < why.size(); ++i) out += (i ? "; " : "") + why[i];
    out += ")";
  }
  return out;
}

std::string DescribeRemaining(const RemainingRun& r, TimeMs age_ms) {
  std::string out;
  switch (r.basis) {
    case RemainingRun::Basis::kExpectedEnd:
      out = fmt::format("expected end in {}", Dur(r.uncapped_ms));
      break;
    case RemainingRun::Basis::kExpectedDuration:
      out = fmt::format("expected to run {} more", Dur(r.uncapped_ms));
      break;
    case RemainingRun::Basis::kAge:
      out = fmt::format("ran {}, no expected duration", Dur(age_ms));
      break;
  }
  if (r.ms < r.uncapped_ms) out += fmt::format(", counted {}", Dur(r.ms));
  return out;
}

struct Candidate {
  const PodInfo* pod = nullptr;
  MoveTraits traits;
  std::string to;
  GpuSet to_gpus;
  Bytes need = 0;
  int nvlink_gpus = 0;
  double score = 0, gain = 0, cost = 0, lscs_after = -1;
  double slow_from = 1, slow_to = 1;
  double relief = 0;
  TimeMs lost_ms = 0;
  RemainingRun remaining;
  std::string why_gain;
};

EffectiveThresholds NeutralThresholds(const Runner& policy) {
  const PodDemand neutral;
  return ResolveThresholds(policy.config(), neutral);
}

// One plan in the making: the inputs, what the window shows, and the cluster as
// the moves planned so far leave it.
struct Planning {
  Planning(const Runner& runner, const PlannerConfig& config, const PlanInput& input)
      : policy(runner),
        cfg(config),
        in(input),
        thr(NeutralThresholds(runner)),
        slots(runner.config().nvlink.slots_per_gpu) {
    plan.at_ms = in.now_ms;
    for (const auto& b : in.budgets) budget_left[b.Key()] = b.disruptions_allowed;
  }

  const Runner& policy;
  const PlannerConfig& cfg;
  const PlanInput& in;
  const EffectiveThresholds thr;
  const int slots;
  Plan plan;
  std::vector<const MetricsSnapshot*> hist;  // the sustain window, oldest first
  std::string coverage;                      // empty: the history covers the window
  std::vector<KubeNode> nodes;               // by name
  std::map<std::string, NodeState> now;      // fresh nodes only, as the moves leave them
  std::set<std::string> cordoned;
  bool all_fresh = false;
  std::map<std::string, std::string> hot;  // node → trigger
  std::set<std::string> memory_hot;        // hot on GPU memory in every snapshot: OOM risk
  bool lscs_high = false;
  std::vector<std::pair<std::string, std::string>> sources;  // node, trigger
  std::map<std::string, std::vector<NodeState>> windows;     // cache of WindowOf
  std::map<std::string, int> budget_left;
  std::set<std::string> moved_owners;
  Evaluation eval;

  std::nullopt_t AddSkip(std::string subject, std::string reason) {
    plan.skipped.push_back({std::move(subject), std::move(reason)});
    return std::nullopt;
  }

  void SelectHistory() {
    for (const auto& s : in.snapshots)
      if (s.fetched_at_ms <= in.now_ms && s.fetched_at_ms >= in.now_ms - cfg.sustain_ms)
        hist.push_back(&s);
    std::stable_sort(hist.begin(), hist.end(),
                     [](auto* a, auto* b) { return a->fetched_at_ms < b->fetched_at_ms; });
  }

  // False (noted): no fresh snapshot, so nothing is moved.
  bool NewestSnapshotFresh() {
    if (hist.empty() || in.now_ms - hist.back()->fetched_at_ms > cfg.max_sample_age_ms) {
      AddSkip("cluster", hist.empty() ? "no metrics snapshot: nothing is moved"
                                      : fmt::format("newest snapshot is {} old "
                                                    "(limit {}): nothing is moved",
                                                    Dur(in.now_ms - hist.back()->fetched_at_ms),
                                                    Dur(cfg.max_sample_age_ms)));
      return false;
    }
    plan.metrics_ok = true;
    return true;
  }

  // A trigger needs history that covers the window without holes.
  void CheckCoverage() {
    if (hist.front()->fetched_at_ms > in.now_ms - cfg.sustain_ms + cfg.max_gap_ms)
      coverage = fmt::format("metrics history covers {} of the {} sustain window",
                             Dur(in.now_ms - hist.front()->fetched_at_ms), Dur(cfg.sustain_ms));
    for (std::size_t i = 1; i < hist.size() && coverage.empty(); ++i)
      if (hist[i]->fetched_at_ms - hist[i - 1]->fetched_at_ms > cfg.max_gap_ms)
        coverage = fmt::format("metrics history has a {} gap (limit {})",
                               Dur(hist[i]->fetched_at_ms - hist[i - 1]->fetched_at_ms),
                               Dur(cfg.max_gap_ms));
    if (!coverage.empty()) AddSkip("cluster", coverage + ": no trigger can hold");
  }

  void KnownNodes() {
    nodes = in.nodes;
    if (nodes.empty()) {
      // Every node seen in the window: one whose series vanished is stale, not gone.
      std::set<std::string> seen;
      for (const auto* s : hist)
        for (const auto& [name, m] : s->nodes) seen.insert(name);
      for (const auto& name : seen) {
        KubeNode unknown;  // labels and allocatable not known: from the snapshot alone
        unknown.name = name;
        nodes.push_back(std::move(unknown));
      }
    }
    std::sort(nodes.begin(), nodes.end(), [](auto& a, auto& b) { return a.name < b.name; });
  }

  // A stale node is neither a source nor a target.
  void FreshNodes() {
    for (const auto& api : nodes) {
      const NodeMetrics* m = nullptr;
      const std::string why = Staleness(*hist.back(), api.name, cfg.max_sample_age_ms, &m);
      if (!why.empty()) {
        AddSkip("node " + api.name,
                "metrics stale or missing (" + why + "): not moved from, not moved to");
        continue;
      }
      now.emplace(api.name, MakeState(api, *m));
      if (api.unschedulable) cordoned.insert(api.name);
    }
    all_fresh = now.size() == nodes.size() && !nodes.empty();
    if (all_fresh) plan.lscs = LscsOf(now);
  }

  // Sustained: every snapshot in the window agrees, with fresh samples.
  void FindHotNodes() {
    for (const auto& api : nodes)
      if (now.count(api.name)) CheckHot(api);
  }

  void CheckHot(const KubeNode& api) {
    std::string first;
    bool all_memory = true;
    for (const auto* s : hist) {
      const NodeMetrics* m = nullptr;
      if (!Staleness(*s, api.name, cfg.max_sample_age_ms, &m).empty()) return;
      const NodeState state = MakeState(api, *m);
      const std::string over = OverReject(state, thr);
      if (over.empty()) return;
      all_memory = all_memory && state.load.gpu_memory > thr.gpu_memory.reject;
      if (first.empty()) first = over;
    }
    hot[api.name] =
        fmt::format("{} (now {}), above for {} ({} samples)", first,
                    OverReject(now.at(api.name), thr), Dur(cfg.sustain_ms), hist.size());
    plan.triggers.push_back("node " + api.name + ": " + hot[api.name]);
    if (all_memory) memory_hot.insert(api.name);
  }

  // LSCS over every node; one stale node makes a snapshot's LSCS unknown.
  void FindLscsTrigger() {
    double lowest = 1;
    lscs_high = all_fresh;
    for (const auto* s : hist) {
      if (!lscs_high) break;
      std::vector<double> u;
      for (const auto& api : nodes) {
        const NodeMetrics* m = nullptr;
        if (!Staleness(*s, api.name, cfg.max_sample_age_ms, &m).empty()) {
          lscs_high = false;
          break;
        }
        u.push_back(MakeState(api, *m).load.gpu_memory);
      }
      const double l = lscs_high ? Lscs(u) : 0;
      if (l <= cfg.lscs_limit) lscs_high = false;
      lowest = std::min(lowest, l);
    }
    if (lscs_high)
      plan.triggers.push_back(fmt::format("cluster: LSCS {:.1f}% > {:.0f}% for {} (lowest {:.1f}%)",
                                          plan.lscs * 100, cfg.lscs_limit * 100,
                                          Dur(cfg.sustain_ms), lowest * 100));
    else if (!all_fresh)
      AddSkip("cluster", "LSCS unknown: a node's metrics are stale or missing");
  }

  // Hot nodes, fullest first; then, for LSCS, nodes above the mean.
  void OrderSources() {
    for (const auto& [name, why] : hot) sources.push_back({name, why});
    auto fuller = [&](auto& a, auto& b) {
      const double ua = NodeMemory(now.at(a.first)), ub = NodeMemory(now.at(b.first));
      return ua != ub ? ua > ub : a.first < b.first;
    };
    std::stable_sort(sources.begin(), sources.end(), fuller);
    if (!lscs_high) return;
    double mean = 0;
    for (const auto& [name, s] : now) mean += NodeMemory(s);
    mean /= static_cast<double>(now.size());
    std::vector<std::pair<std::string, std::string>> above;
    for (const auto& [name, s] : now)
      if (!hot.count(name) && NodeMemory(s) > mean)
        above.push_back({name, fmt::format("LSCS {:.1f}% > {:.0f}%; GPU memory {}% above the "
                                           "mean {}%",
                                           plan.lscs * 100, cfg.lscs_limit * 100,
                                           Pct(NodeMemory(s)), Pct(mean))});
    std::stable_sort(above.begin(), above.end(), fuller);
    sources.insert(sources.end(), above.begin(), above.end());
  }

  // A node as each snapshot of the window saw it, its fresh readings only.
  const std::vector<NodeState>& WindowOf(const std::string& name) {
    auto [it, added] = windows.try_emplace(name);
    if (!added) return it->second;
    for (const auto& api : nodes) {
      if (api.name != name) continue;
      for (const auto* s : hist) {
        const NodeMetrics* m = nullptr;
        if (Staleness(*s, name, cfg.max_sample_age_ms, &m).empty())
          it->second.push_back(MakeState(api, *m));
      }
    }
    return it->second;
  }

  // The move off `src` that gains most over its cost, if any, planned.
  void PlanSource(const std::string& src, const std::string& trigger) {
    if (static_cast<int>(plan.moves.size()) >= cfg.max_moves) {
      AddSkip("node " + src,
              fmt::format("the plan already has {} moves (max-moves)", cfg.max_moves));
      return;
    }
    std::optional<Candidate> best;
    const double lscs_before = LscsOf(now);
    for (const PodInfo* p : PodsOn(src)) {
      std::optional<Candidate> c = CandidateFor(*p, src, lscs_before);
      if (c && (!best || c->gain - c->cost > best->gain - best->cost)) best = std::move(c);
    }
    if (!best) {
      AddSkip("node " + src, "no pod on it can be moved with a gain");
      return;
    }
    ApplyBest(src, trigger, *best, lscs_before);
  }

  std::vector<const PodInfo*> PodsOn(const std::string& src) const {
    std::vector<const PodInfo*> here;
    for (const auto& p : in.pods)
      if (p.node == src && !p.deleting && p.Active() && p.demand.gpu_count > 0) here.push_back(&p);
    std::stable_sort(here.begin(), here.end(),
                     [](auto* a, auto* b) { return a->Key() < b->Key(); });
    return here;
  }

  // Moving `p` off `src` to the policy's pick, if it may move and the move pays.
  std::optional<Candidate> CandidateFor(const PodInfo& p, const std::string& src,
                                        double lscs_before) {
    const std::string subject = "pod " + p.Key();
    Candidate c;
    c.pod = &p;
    if (std::optional<std::string> why = WhyNotMovable(p, &c.traits)) return AddSkip(subject, *why);
    const NodeResult* t = PickTarget(p, src, subject);
    if (t == nullptr) return std::nullopt;
    Aim(&c, *t);
    Cost(&c);
    Gain(&c, *t, src);
    if (c.relief <= 0)
      return AddSkip(subject,
                     fmt::format("not slowed here more than at {}: a move gains nothing ({})", c.to,
                                 c.why_gain));
    // An LSCS source is one for the cluster's sake: its move must lower LSCS too.
    if (!hot.count(src) && !LowersLscs(&c, src, lscs_before))
      return AddSkip(subject, fmt::format("moving to {} would not lower LSCS ({:.1f}% → {:.1f}%)",
                                          c.to, lscs_before * 100, c.lscs_after * 100));
    if (c.gain < cfg.min_gain_over_cost * c.cost || c.gain <= 0)
      return AddSkip(subject, fmt::format("gain {:.0f} GPU·s does not beat {:.1f} × cost {:.0f} "
                                          "GPU·s (lost work {}, start-up {}) moving to {}: {}",
                                          c.gain, cfg.min_gain_over_cost, c.cost, Dur(c.lost_ms),
                                          Dur(c.traits.startup_ms), c.to, c.why_gain));
    return c;
  }

  // Its annotations, controller, cooldown or a disruption budget; none: it may move.
  std::optional<std::string> WhyNotMovable(const PodInfo& p, MoveTraits* traits) {
    if (Status s = ParseMoveTraits(p.demand.annotations, cfg.default_startup_ms, traits); !s.ok())
      return s.reason();
    if (!traits->migratable) return "not movable (annotation tidal.io/migratable is not \"true\")";
    if (p.owner.empty()) return "no controller would recreate it";
    if (std::string cool = WhyCoolingDown(p); !cool.empty()) return cool;
    if (std::string blocked = WhyBudgetForbids(p); !blocked.empty()) return blocked;
    return std::nullopt;
  }

  std::string WhyCoolingDown(const PodInfo& p) const {
    const std::string owner_key = p.demand.namespace_name + "/" + p.owner;
    std::string cool;
    for (const std::string& key : {p.Key(), owner_key}) {
      const auto it = in.moved_at_ms.find(key);
      if (it != in.moved_at_ms.end() && in.now_ms - it->second < cfg.cooldown_ms)
        cool = fmt::format("moved {} ago (cooldown {})", Dur(in.now_ms - it->second),
                           Dur(cfg.cooldown_ms));
    }
    if (cool.empty() && moved_owners.count(owner_key))
      cool = "its controller has a move in this plan";
    if (cool.empty() && p.started_ms < 0) cool = "start time unknown: the work lost cannot be told";
    if (cool.empty() && in.now_ms - p.started_ms < cfg.cooldown_ms)
      cool = fmt::format("started {} ago (cooldown {})", Dur(in.now_ms - p.started_ms),
                         Dur(cfg.cooldown_ms));
    return cool;
  }

  std::string WhyBudgetForbids(const PodInfo& p) {
    for (const auto& b : in.budgets)
      if (b.Covers(p.demand) && budget_left[b.Key()] <= 0)
        return "PodDisruptionBudget " + b.Key() + " allows no disruption now";
    return {};
  }

  // Every other fresh, schedulable node, judged by the extender's policy; none fits:
  // null, noted.
  const NodeResult* PickTarget(const PodInfo& p, const std::string& src,
                               const std::string& subject) {
    std::vector<const NodeState*> targets;
    for (const auto& [name, s] : now)
      if (name != src && !cordoned.count(name)) targets.push_back(&s);
    if (targets.empty()) {
      AddSkip(subject, "no other node with fresh metrics");
      return nullptr;
    }
    policy.Evaluate(p.demand, targets, RunOptions{false, false}, &eval);
    if (!eval.pod_status.ok() || eval.best < 0) {
      std::string why = eval.pod_status.ok() ? std::string() : eval.pod_status.reason();
      if (why.empty() && !eval.nodes.empty()) why = eval.nodes.front().status.reason();
      AddSkip(subject, "no node fits it" + (why.empty() ? "" : ": " + why));
      return nullptr;
    }
    return &eval.nodes[static_cast<std::size_t>(eval.best)];
  }

  void Aim(Candidate* c, const NodeResult& t) const {
    const PodInfo& p = *c->pod;
    c->to = t.node->name;
    c->score = t.score;
    c->need = eval.cycle.memory_need_per_gpu;
    if (t.placed) {
      c->to_gpus = t.gpus;
    } else {
      for (int g = 0; g < p.demand.gpu_count && g < static_cast<int>(t.node->gpus.size()); ++g)
        c->to_gpus.Add(g);
    }
  }

  void Cost(Candidate* c) const {
    const PodInfo& p = *c->pod;
    const double gpus = p.demand.gpu_count;
    const TimeMs age = in.now_ms - p.started_ms;
    c->lost_ms = WorkLostMs(age, c->traits.checkpoint_interval_ms);
    c->cost = gpus * static_cast<double>(c->lost_ms + c->traits.startup_ms) / 1000.0;
  }

  // What the pod gains: the time it runs slower here than at the target, over
  // the time it is expected to keep running (not a fixed horizon: a pod near
  // its end gains little from any move).
  void Gain(Candidate* c, const NodeResult& t, const std::string& src) {
    const PodInfo& p = *c->pod;
    const double gpus = p.demand.gpu_count;
    const TimeMs age = in.now_ms - p.started_ms;
    const double io_share = c->traits.io_share.value_or(
        p.demand.load_type == LoadType::kIoHeavy ? kDefaultIoShareIoHeavy : kDefaultIoShare);
    c->nvlink_gpus =
        PodUsesNvlink(policy.config().nvlink, p.demand) ? std::max(1, p.demand.gpu_count) : 0;
    const NodeState* here_at = LeastSlowdownHere(c, src, io_share);
    c->slow_to = MostSlowdownThere(*c, *t.node, io_share);
    const double speedup = std::max(0.0, 1 - c->slow_to / c->slow_from);
    // Above the GPU-memory reject threshold the pod is at risk of an OOM kill,
    // which no reading turns into a slowdown: as before, it counts as relieved
    // in proportion to the target's score (a judgement, not a measurement).
    const double risk = memory_hot.count(src) ? c->score / 100.0 : 0;
    c->relief = std::max(speedup, risk);
    c->remaining = EstimateRemaining(c->traits, age, in.now_ms, cfg.gain_horizon_ms);
    c->gain = gpus * static_cast<double>(c->remaining.ms) / 1000.0 * c->relief;
    c->why_gain =
        fmt::format("slowdown here {}, at {} up to {:.2f}×",
                    here_at ? DescribeSlowdown(EstimateSlowdown(*here_at, io_share, c->nvlink_gpus),
                                               *here_at, io_share)
                            : std::string("1.00×"),
                    c->to, c->slow_to);
    if (risk > speedup) c->why_gain += fmt::format("; OOM risk, target score {:.0f}", c->score);
    c->why_gain += "; " + DescribeRemaining(c->remaining, age);
  }

  // Here: the least slowdown of the window (the trigger needs every snapshot
  // fresh); there: the most, now included (a quiet moment at the target is no
  // promise). Both sides judged as the window saw them, in the move's disfavour.
  const NodeState* LeastSlowdownHere(Candidate* c, const std::string& src, double io_share) {
    const NodeState* here_at = nullptr;
    for (const NodeState& w : WindowOf(src)) {
      const double v = EstimateSlowdown(w, io_share, c->nvlink_gpus).total();
      if (!here_at || v < c->slow_from) {
        c->slow_from = v;
        here_at = &w;
      }
    }
    return here_at;
  }

  // With this pod's own NVLink traffic added.
  double MostSlowdownThere(const Candidate& c, const NodeState& target, double io_share) {
    auto slow_there = [&](NodeState n) {
      ShiftCompetition(&n, c.nvlink_gpus, slots, +1);
      return EstimateSlowdown(n, io_share, c.nvlink_gpus).total();
    };
    double most = slow_there(target);
    for (const NodeState& w : WindowOf(c.to)) most = std::max(most, slow_there(w));
    return most;
  }

  bool LowersLscs(Candidate* c, const std::string& src, double lscs_before) const {
    std::map<std::string, NodeState> after = now;
    ApplyMove(&after.at(src), c->traits.gpus, c->pod->demand.gpu_count, &after.at(c->to),
              c->to_gpus, c->need);
    c->lscs_after = LscsOf(after);
    return c->lscs_after < lscs_before;
  }

  void ApplyBest(const std::string& src, const std::string& trigger, const Candidate& best,
                 double lscs_before) {
    const PodInfo& p = *best.pod;
    Move m;
    m.pod = p.Key();
    m.owner_key = p.demand.namespace_name + "/" + p.owner;
    m.from = src;
    m.to = best.to;
    m.trigger = trigger;
    m.gain_gpu_s = best.gain;
    m.cost_gpu_s = best.cost;
    m.target_score = best.score;
    m.slowdown_from = best.slow_from;
    m.slowdown_to = best.slow_to;
    m.remaining_ms = best.remaining.ms;
    m.reason =
        fmt::format("{}; to {} (score {:.0f}); gain {:.0f} GPU·s > cost {:.0f} GPU·s ({})", trigger,
                    m.to, m.target_score, m.gain_gpu_s, m.cost_gpu_s, best.why_gain);
    if (best.lscs_after >= 0)
      m.reason += fmt::format("; LSCS {:.1f}% → {:.1f}%", lscs_before * 100, best.lscs_after * 100);
    for (const auto& b : in.budgets)
      if (b.Covers(p.demand)) --budget_left[b.Key()];
    moved_owners.insert(m.owner_key);
    ApplyMove(&now.at(src), best.traits.gpus, p.demand.gpu_count, &now.at(m.to), best.to_gpus,
              best.need);
    ShiftCompetition(&now.at(src), best.nvlink_gpus, slots, -1);
    ShiftCompetition(&now.at(m.to), best.nvlink_gpus, slots, +1);
    plan.moves.push_back(std::move(m));
  }
};

}  // namespace

Slowdown EstimateSlowdown(const NodeState& node, double io_share, int nvlink_gpus) {
  Slowdown s;
  const double b = std::clamp(io_share, 0.0, 1.0);
  s.io = 1 - b + b * std::max(1.0, node.storage_await_ms / kAwaitSlowdownMs);
  if (nvlink_gpus > 0) s.nvlink = std::max(1.0, node.nvlink_competition * nvlink_gpus);
  return s;
}

std::vector<std::string> Validate(const PlannerConfig& c) {
  std::vector<std::string> e;
  if (c.sustain_ms <= 0) e.push_back("--sustain: expected a duration above zero, such as 10m");
  if (c.max_sample_age_ms <= 0)
    e.push_back("--max-sample-age: expected a duration above zero, such as 2m");
  if (c.max_gap_ms <= 0) e.push_back("--max-gap: expected a duration above zero, such as 3m");
  if (!(c.lscs_limit > 0 && c.lscs_limit < 1))
    e.push_back("--lscs-limit: expected a fraction between 0 and 1, such as 0.15");
  if (c.max_moves < 0) e.push_back("--max-moves: expected 0 or more");
  if (c.cooldown_ms < 0) e.push_back("--cooldown: expected a duration, such as 30m");
  if (c.gain_horizon_ms <= 0)
    e.push_back("--gain-horizon: expected a duration above zero, such as 30m");
  if (!(c.min_gain_over_cost >= 0) || !std::isfinite(c.min_gain_over_cost))
    e.push_back("--min-gain-over-cost: expected a number of 0 or more, such as 1");
  if (c.default_startup_ms < 0) e.push_back("--default-startup: expected a duration, such as 60s");
  return e;
}

Plan MakePlan(const Runner& policy, const PlannerConfig& cfg, const PlanInput& in) {
  Planning p(policy, cfg, in);
  p.SelectHistory();
  if (!p.NewestSnapshotFresh()) return std::move(p.plan);
  p.CheckCoverage();
  p.KnownNodes();
  p.FreshNodes();
  if (p.coverage.empty()) {
    p.FindHotNodes();
    p.FindLscsTrigger();
  }
  p.OrderSources();
  for (const auto& [src, trigger] : p.sources) p.PlanSource(src, trigger);
  return std::move(p.plan);
}

std::string FormatPlan(const Plan& plan) {
  std::string out;
  out += fmt::format("rebalance plan: {} move(s)", plan.moves.size());
  if (plan.lscs >= 0) out += fmt::format(", LSCS {:.1f}%", plan.lscs * 100);
  out += plan.metrics_ok ? "\n" : " (metrics not usable)\n";
  for (const auto& t : plan.triggers) out += "  trigger  " + t + "\n";
  for (const auto& m : plan.moves)
    out += fmt::format("  move     {}  {} -> {}: {}\n", m.pod, m.from, m.to, m.reason);
  for (const auto& s : plan.skipped) out += fmt::format("  skip     {}: {}\n", s.subject, s.reason);
  return out;
}

}  // namespace tidal::rebalance
