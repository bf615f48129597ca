#include "tidal/sim/fgd_experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>

#include "sim/node_classes.h"
#include "sim/scheduling.h"
#include "sim/trace_policies.h"
#include "tidal/core/status.h"
#include "tidal/policy/fragmentation.h"
#include "tidal/policy/look_ahead.h"
#include "tidal/policy/milli_gpu.h"
#include "tidal/policy/runner.h"
#include "tidal/sim/engine.h"

namespace tidal::sim {

const std::vector<std::string>& FgdPolicyNames() {
  static const std::vector<std::string> names = {"random",
                                                 "dot-prod",
                                                 "gpu-clustering",
                                                 "gpu-packing",
                                                 "best-fit-milli",
                                                 "fgd",
                                                 "load-aware-spread",
                                                 "load-aware-pack",
                                                 "load-aware-frag",
                                                 "load-aware-frag-pack",
                                                 "fgd-learned",
                                                 "fgd-lookahead",
                                                 "load-aware-frag-ahead",
                                                 "load-aware-frag-learned",
                                                 "load-aware-frag-learned-ahead"};
  return names;
}

const std::vector<std::string>& FgdKnownPolicyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = FgdPolicyNames();
    all.push_back("fgd-fill");
    return all;
  }();
  return names;
}

bool FgdPolicyLearns(const std::string& policy) {
  return policy == "fgd-learned" || policy == "load-aware-frag-learned" ||
         policy == "load-aware-frag-learned-ahead";
}

bool FgdPolicyLooksAhead(const std::string& policy) {
  return policy == "fgd-lookahead" || policy == "load-aware-frag-ahead" ||
         policy == "load-aware-frag-learned-ahead";
}

std::string FgdPaperName(const std::string& policy) {
  static const std::map<std::string, std::string> names = {{"random", "01-Random"},
                                                           {"dot-prod", "02-DotProd"},
                                                           {"gpu-clustering", "03-GpuClustering"},
                                                           {"gpu-packing", "04-GpuPacking"},
                                                           {"best-fit-milli", "05-BestFit"},
                                                           {"fgd", "06-FGD"}};
  const auto it = names.find(policy);
  return it == names.end() ? "" : it->second;
}

namespace {

// Listed pod `p` as a trace pod, copy number `copy` of it: the listed one under
// its name, its copies "-clone1", "-clone2", …. Set in *d's storage, so that a
// loop reusing one PodDemand allocates nothing per pod.
void SetDemand(const traces::OpenbPod& p, int copy, int uid, PodDemand* d) {
  d->name.assign(p.name);
  if (copy > 0) d->name.append("-clone").append(std::to_string(copy));
  d->uid.assign(std::to_string(uid));
  SetTracePodRequests(d, p.cpu_milli, p.memory_mib, p.gpus, p.gpu_milli);
  d->gpu_models = p.gpu_models;
}

PodDemand ToDemand(const traces::OpenbPod& p, int copy, int uid) {
  PodDemand d;
  SetDemand(p, copy, uid, &d);
  return d;
}

struct Record {
  std::int64_t arrived = 0, allocated = 0;
  double frag = 0;
};

// The paper's discretisation: per integer arrived %, the mean of the records that
// round to it, or of those within ±1 when none do.
void Discretise(const std::vector<Record>& records, std::int64_t capacity, FgdSeedRun* run) {
  const int cols = kFgdMaxArrivedPct + 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  run->alloc_pct.assign(cols, nan);
  run->frag_pct.assign(cols, nan);
  run->frag_ratio_pct.assign(cols, nan);
  const double cap = static_cast<double>(capacity);
  std::vector<double> sa(cols), sf(cols), sr(cols);
  std::vector<int> n(cols);
  auto add = [&](std::vector<double>* a, std::vector<double>* f, std::vector<double>* r,
                 std::vector<int>* k, int col, const Record& rec) {
    const double idle = cap - static_cast<double>(rec.allocated);
    (*a)[col] += 100.0 * static_cast<double>(rec.allocated) / cap;
    (*f)[col] += 100.0 * rec.frag / cap;
    (*r)[col] += idle > 0 ? 100.0 * rec.frag / idle : 0;
    ++(*k)[col];
  };
  for (const Record& rec : records) {
    const long col = std::lround(100.0 * static_cast<double>(rec.arrived) / cap);
    if (col >= 0 && col < cols) add(&sa, &sf, &sr, &n, static_cast<int>(col), rec);
  }
  for (int c = 0; c < cols; ++c) {
    if (n[c] == 0) {
      std::vector<double> a(cols), f(cols), r(cols);
      std::vector<int> k(cols);
      for (const Record& rec : records) {
        const double pct = 100.0 * static_cast<double>(rec.arrived) / cap;
        if (std::fabs(pct - c) <= 1.0) add(&a, &f, &r, &k, c, rec);
      }
      if (k[c] == 0) continue;
      run->alloc_pct[c] = a[c] / k[c];
      run->frag_pct[c] = f[c] / k[c];
      run->frag_ratio_pct[c] = r[c] / k[c];
      continue;
    }
    run->alloc_pct[c] = sa[c] / n[c];
    run->frag_pct[c] = sf[c] / n[c];
    run->frag_ratio_pct[c] = sr[c] / n[c];
  }
}

// The leftmost maximum of an array that changes a few entries at a time: an
// 8-ary max-tree stored level by level (the 8 children of an entry share a cache
// line). Set is O(levels), stopping where an ancestor does not change;
// Leftmost is O(8 · levels).
class LeftmostMax {
 public:
  static constexpr double kNone = -std::numeric_limits<double>::infinity();
  explicit LeftmostMax(std::size_t size) {
    std::size_t n = size;
    do {
      n = (n + 7) / 8 * 8;
      offset_.push_back(total_);
      total_ += n;
      n /= 8;
    } while (n > 1 || offset_.size() == 1);
    // The top level holds at most 8 entries.
  }
  std::size_t size() const { return total_; }
  // `t` of size() entries; leaves (the first level) already set.
  void Build(std::vector<double>& t) const {
    for (std::size_t k = 0; k + 1 < offset_.size(); ++k) {
      const std::size_t len = offset_[k + 1] - offset_[k];
      for (std::size_t b = 0; b < len; b += 8)
        t[offset_[k + 1] + b / 8] = BlockMax(&t[offset_[k] + b]);
    }
  }
  void Set(std::vector<double>& t, std::size_t at, double value) const {
    t[at] = value;
    for (std::size_t k = 0; k + 1 < offset_.size(); ++k) {
      const std::size_t block = at / 8 * 8;
      const double m = BlockMax(&t[offset_[k] + block]);
      const std::size_t up = offset_[k + 1] + block / 8;
      if (t[up] == m) return;  // NaN never enters: callers map it to kNone
      t[up] = m;
      at = block / 8;
    }
  }
  // After the leaves at the ascending positions `at` were written: their
  // ancestors, each block once (Set's per leaf would climb once per leaf).
  void Repair(std::vector<double>& t, std::span<const std::size_t> at,
              std::vector<std::size_t>& blocks) const {
    blocks.clear();
    for (std::size_t i : at)
      if (blocks.empty() || blocks.back() != i / 8) blocks.push_back(i / 8);
    for (std::size_t k = 0; k + 1 < offset_.size() && !blocks.empty(); ++k) {
      std::size_t kept = 0;  // blocks whose maximum changed, as their parents' blocks
      for (std::size_t b : blocks) {
        const double m = BlockMax(&t[offset_[k] + b * 8]);
        double& up = t[offset_[k + 1] + b];
        if (up == m) continue;
        up = m;
        if (kept == 0 || blocks[kept - 1] != b / 8) blocks[kept++] = b / 8;
      }
      blocks.resize(kept);
    }
  }
  // The first leaf holding the maximum, or npos when every leaf is kNone.
  std::size_t Leftmost(const std::vector<double>& t) const {
    const std::size_t top = offset_.back();
    const double m = BlockMax(&t[top]);
    if (!(m > kNone)) return std::string::npos;
    std::size_t i = 0;
    while (t[top + i] != m) ++i;
    for (std::size_t k = offset_.size() - 1; k > 0; --k) {
      std::size_t c = i * 8;
      while (t[offset_[k - 1] + c] != m) ++c;
      i = c;
    }
    return i;
  }

 private:
  static double BlockMax(const double* b) {
    double m = b[0];
    for (int j = 1; j < 8; ++j) m = std::max(m, b[j]);
    return m;
  }
  std::vector<std::size_t> offset_;  // where each level starts; leaves first
  std::size_t total_ = 0;
};

}  // namespace

std::vector<traces::OpenbPod> WithCpuOnlyShare(std::vector<traces::OpenbPod> pods,
                                               double cpu_only_pct, std::uint64_t seed) {
  if (!(cpu_only_pct >= 0 && cpu_only_pct < 100))
    throw InputError{"CPU-only share: expected a percentage in [0, 100)"};
  std::vector<std::size_t> cpu_only;
  for (std::size_t i = 0; i < pods.size(); ++i)
    if (pods[i].gpus == 0) cpu_only.push_back(i);
  const double gpu_pods = static_cast<double>(pods.size() - cpu_only.size());
  const double p = cpu_only_pct / 100.0;
  const auto want = static_cast<std::size_t>(std::llround(p * gpu_pods / (1.0 - p)));
  Random rng(seed);
  if (want > cpu_only.size()) {
    if (cpu_only.empty())
      throw InputError{"CPU-only share: the pod list has no CPU-only pod to draw from"};
    const std::size_t have = cpu_only.size();
    for (std::size_t k = 1; have + k - 1 < want; ++k) {
      traces::OpenbPod clone = pods[cpu_only[rng.Below(have)]];
      clone.name += "-cpu" + std::to_string(k);
      pods.push_back(std::move(clone));
    }
  } else if (want < cpu_only.size()) {
    std::vector<char> drop(pods.size(), 0);
    for (std::size_t left = cpu_only.size(); left > want; --left) {
      const std::size_t at = rng.Below(left);
      drop[cpu_only[at]] = 1;
      cpu_only[at] = cpu_only[left - 1];
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < pods.size(); ++i)
      if (!drop[i]) pods[kept++] = std::move(pods[i]);
    pods.resize(kept);
  }
  return pods;
}

namespace {

// fgd-fill's plan: the LP's for the task types that name no GPU model and, where
// sharing types name models, one for each named model's GPUs (PlanFills' way).
YAML::Node SolvedFillPlan(const std::vector<FgdTask>& tasks,
                          const decltype(FgdOptions::solve_lp)& solve) {
  YAML::Node args(YAML::NodeType::Sequence);
  for (const ModelTasks& group : TasksByPlannedModel(tasks)) {
    const FillPlanLp lp = BuildFillPlanLp(group.tasks);
    if (lp.text.empty()) continue;
    const auto y = solve(lp.text, lp.fillings.size());
    if (!y) throw InputError{"fgd-fill: the fill plan's LP found no optimum"};
    for (const YAML::Node& entry : FillPlanArgs(lp, *y, group.model)) args.push_back(entry);
  }
  return args;
}

}  // namespace

struct FgdExperiment::Impl {
  std::vector<FgdTask> tasks;  // FGD's target workload, from the listed pods
  YAML::Node fill_plan;        // fgd-fill's, for `tasks` (with options.solve_lp)
};

FgdExperiment::FgdExperiment(std::vector<traces::OpenbNode> nodes,
                             std::vector<traces::OpenbPod> pods, FgdOptions options)
    : nodes_(std::move(nodes)), pods_(std::move(pods)), options_(options) {
  for (const auto& n : nodes_) capacity_milli_ += std::int64_t{n.gpus} * kMilliPerGpu;
  if (capacity_milli_ == 0) throw InputError{"fgd-inflation: the node list has no GPUs"};
  if (pods_.empty()) throw InputError{"fgd-inflation: the pod list is empty"};
  std::vector<PodDemand> listed;
  listed.reserve(pods_.size());
  for (std::size_t i = 0; i < pods_.size(); ++i)
    listed.push_back(ToDemand(pods_[i], 0, static_cast<int>(i)));
  auto impl = std::make_unique<Impl>();
  impl->tasks = TypicalTasks(listed, options_.popularity_pct);
  // Every listed share, not only the popular task types: a rare small share is
  // what fills the room beside a large one.
  if (options_.solve_lp)
    impl->fill_plan = SolvedFillPlan(TypicalTasks(listed, 100), options_.solve_lp);
  impl_ = std::move(impl);
}

FgdExperiment::~FgdExperiment() = default;

namespace {

// Removes random pods from `clone_of` while their GPU request (`total`) passes
// `target`: the at-th remaining pod, as erasing it from the vector would, but
// found in O(log n) (a Fenwick tree of the remaining positions) instead of
// erased in O(n).
void TrimToTarget(const std::vector<traces::OpenbPod>& pods, std::int64_t target,
                  std::int64_t total, Random& rng, std::vector<int>* clone_of) {
  const std::size_t n = clone_of->size();
  std::vector<std::size_t> fenwick(n + 1, 0);
  for (std::size_t i = 1; i <= n; ++i) {
    ++fenwick[i];
    if (const std::size_t up = i + (i & (~i + 1)); up <= n) fenwick[up] += fenwick[i];
  }
  std::size_t top = 1;
  while (top * 2 <= n) top *= 2;
  std::vector<char> removed(n, 0);
  for (std::size_t left = n; total > target && left > 0; --left) {
    std::size_t at = rng.Below(left), pos = 0;  // the at-th (0-based) remaining
    for (std::size_t step = top; step > 0; step /= 2)
      if (pos + step <= n && fenwick[pos + step] <= at) {
        pos += step;
        at -= fenwick[pos];
      }
    total -= pods[(*clone_of)[pos]].TotalMilli();
    removed[pos] = 1;
    for (std::size_t i = pos + 1; i <= n; i += i & (~i + 1)) --fenwick[i];
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!removed[i]) (*clone_of)[kept++] = (*clone_of)[i];
  clone_of->resize(kept);
}

// The seed's workload: the pod list shuffled, then inflated (or trimmed) to
// tune_ratio × capacity; per pod in placement order, its index in `pods`.
std::vector<int> SeedWorkload(const std::vector<traces::OpenbPod>& pods, const FgdOptions& options,
                              std::int64_t capacity_milli, Random& rng) {
  std::vector<int> order(pods.size());
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle)
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  const auto target =
      static_cast<std::int64_t>(options.tune_ratio * static_cast<double>(capacity_milli));
  std::int64_t total = 0;
  for (int i : order) total += pods[i].TotalMilli();
  std::vector<int> clone_of = order;
  if (!options.inflate) return clone_of;  // the list as given
  if (total > target) {
    TrimToTarget(pods, target, total, rng, &clone_of);
    return clone_of;
  }
  for (;;) {
    const int pick = order[rng.Below(order.size())];
    if (total + pods[pick].TotalMilli() > target) break;
    total += pods[pick].TotalMilli();
    clone_of.push_back(pick);
  }
  return clone_of;
}

// The cluster, nothing placed. openb has no usage. load-aware-spread|pack read the
// requested share as the GPU memory load (so their filter refuses nodes more than
// 82 % allocated); load-aware-frag[-pack] sees what the extender sees of a node
// without series: unknown, never rejected on load, scored at the unknown-node
// score. Milli-GPU shares are still fitted per GPU (milligpu), so nothing is
// over-committed.
std::vector<NodeState> ClusterViews(const std::vector<traces::OpenbNode>& nodes,
                                    const std::string& policy) {
  std::vector<NodeState> views;
  views.reserve(nodes.size());
  for (const auto& n : nodes)
    views.push_back(TraceNodeView(n.name, n.cpu_milli, n.memory_mib, n.gpus, n.model));
  if (policy.starts_with("load-aware-frag"))
    for (auto& v : views) v.metrics_known = false;
  return views;
}

// The nodes in tie order: name order, so that the first of equal scores is the
// smallest name. With `permute`, the authors' renaming: the k-th node in name
// order becomes "%04d-<name>" with the k-th number of a seeded permutation, so
// name order is that order.
std::vector<std::size_t> TieOrder(const std::vector<NodeState>& views, bool permute, Random& rng) {
  std::vector<std::size_t> by_name(views.size());
  std::iota(by_name.begin(), by_name.end(), std::size_t{0});
  std::stable_sort(by_name.begin(), by_name.end(),
                   [&](std::size_t a, std::size_t b) { return views[a].name < views[b].name; });
  if (!permute) return by_name;
  std::vector<std::size_t> prefix(by_name.size());
  std::iota(prefix.begin(), prefix.end(), std::size_t{0});
  for (std::size_t i = prefix.size(); i > 1; --i) std::swap(prefix[i - 1], prefix[rng.Below(i)]);
  std::vector<std::size_t> renamed(by_name.size());
  for (std::size_t k = 0; k < by_name.size(); ++k) renamed[prefix[k]] = by_name[k];
  return renamed;
}

// What a shape of pod last saw of the nodes (SeedPlacer's cache): the plain
// path keeps the version, verdict and score of each node, indexed only the GPUs.
struct ShapeVerdicts : Verdicts {
  std::size_t synced = 0;    // indexed: entries of `changes` already looked at
  std::vector<double> best;  // indexed: LeftmostMax over the tie order
  std::vector<char> dead;    // indexed: infeasible, and so for the rest of the run
};

// One seed's placement loop over a cluster: per pod, re-score the nodes whose
// verdicts it cannot reuse, choose the node, place the pod and record the
// cluster's fragmentation (FGD's measure).
//
// Pods of one shape score the same on an unchanged node (the plugins are pure
// functions of pod and node), so each shape keeps its last verdicts per node and
// only nodes changed since are re-scored. random's scores hash the pod's
// identity, so only its filter verdicts (a pure function of shape and node) are
// cached: a milligpu-only Runner finds the feasible nodes and the policy's Runner
// scores just those (two_stage).
//
// indexed: instead of two scans of every node per pod (which nodes changed since
// this shape's last pod; which feasible node scores best), a log of the changed
// nodes and, per shape, a max-tree over the nodes in tie order whose leftmost
// maximum is the node the scan would choose; of the nodes to re-score, one per
// class of nodes no plugin can tell apart (TraceNodeClasses: at 16 copies of
// openb a shape's first pod finds 12 nodes per class). The same decisions (the
// plain scans are the tests' oracle); per pod, work in the changed nodes only.
class SeedPlacer {
 public:
  SeedPlacer(const FgdOptions& options, const std::string& policy, std::uint64_t seed,
             const std::vector<FgdTask>& tasks, const Runner& runner, std::vector<NodeState> views,
             std::vector<std::size_t> by_name, std::size_t pods)
      : tasks_(tasks),
        runner_(&runner),
        fit_(MakeTraceFit()),
        cache_(options.cache_by_shape),
        two_stage_(cache_ && policy == "random"),
        lowest_name_(options.tie_break == FgdTieBreak::kLowestName),
        indexed_(options.indexed && cache_ && !two_stage_ && lowest_name_),
        input_slot_(IdentityOrder(views.size())),
        views_(indexed_ ? StoreInTieOrder(std::move(views), &by_name, &input_slot_)
                        : std::move(views)),
        by_name_(std::move(by_name)),
        node_frag_(views_.size()),
        node_version_(views_.size(), 1),
        rank_(views_.size()),
        tree_(views_.size()),
        tie_rng_(seed ^ 0x66676469ULL) {
    for (std::size_t n = 0; n < views_.size(); ++n)
      node_frag_[n] = NodeFragmentation(views_[n], tasks_);
    // Summed in the input's order, whatever the storage's: the same total to the bit.
    for (std::size_t slot : input_slot_) frag_total_ += node_frag_[slot];
    input_of_.resize(input_slot_.size());
    for (std::size_t i = 0; i < input_slot_.size(); ++i) input_of_[input_slot_[i]] = i;
    for (std::size_t k = 0; k < by_name_.size(); ++k) rank_[by_name_[k]] = k;
    if (indexed_) {
      seen_.assign(views_.size(), 0);
      classes_.emplace(views_);
    }
    records_.reserve(pods);
  }

  // The nodes as they are now, for counting what fits where.
  std::vector<const NodeState*> Nodes() const {
    std::vector<const NodeState*> nodes;
    nodes.reserve(views_.size());
    for (const NodeState& v : views_) nodes.push_back(&v);
    return nodes;
  }

  // Places `pod` (or fails it) and records the cluster after it.
  void Place(const PodDemand& pod, FgdSeedRun* run) {
    ShapeVerdicts* v = VerdictsOf(pod);
    Refresh(pod, v, run);
    int chosen = -1;
    if (indexed_) {
      const std::size_t first = tree_.Leftmost(v->best);
      if (first != std::string::npos) chosen = static_cast<int>(by_name_[first]);
    }
    if (two_stage_) v = ScoreFeasible(pod, *v, run);
    if (!indexed_) chosen = ChooseByScan(*v);
    Settle(pod, chosen, *v, run);
  }

  const std::vector<Record>& records() const { return records_; }

  // Look-ahead: places `pod` seeing the next pod in the queue. Among `pod`'s
  // best-scoring nodes (at most kCandidates, in tie order), the one where the
  // pod's score plus the best score the next pod can still get is highest.
  void PlaceLookingAhead(const PodDemand& pod, const PodDemand& next, FgdSeedRun* run) {
    VerdictsOf(pod);
    VerdictsOf(next);
    ShapeVerdicts* v = VerdictsOf(pod);  // no insertion left: both pointers stay valid
    ShapeVerdicts* w = VerdictsOf(next);
    Refresh(pod, v, run);
    if (w != v) Refresh(next, w, run);
    if (indexed_)
      AheadIndexed(*v, *w);
    else
      AheadByScan(*v, *w);
    Settle(pod, BestAhead(pod, next, run), *v, run);
  }

  // From the next pod on, scores with `runner` (fgd-learned's relearned target
  // workload): every score kept so far is forgotten. indexed keeps which nodes
  // each shape could not use: a relearned workload changes scores, not what fits.
  void UsePolicy(const Runner& runner) {
    runner_ = &runner;
    if (indexed_) {
      for (ShapeVerdicts& v : verdicts_) v.best.clear();
      return;
    }
    verdicts_.clear();
    shape_ids_.clear();
  }

 private:
  using Shape = std::tuple<std::int64_t, Bytes, int, int, std::vector<std::string>>;
  static constexpr double kNone = LeftmostMax::kNone;

  static std::vector<std::size_t> IdentityOrder(std::size_t n) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    return order;
  }

  // indexed: the nodes stored in tie order, so that node index and tie position
  // agree: the changed nodes, re-scored in index order, then walk the nodes'
  // states (copied here in that order, GPUs included) and the max-trees' leaves
  // forwards instead of at random (the seeded renaming permutes the tie order).
  // Leaves *by_name the identity and `*input_slot` where each input node went.
  static std::vector<NodeState> StoreInTieOrder(std::vector<NodeState> views,
                                                std::vector<std::size_t>* by_name,
                                                std::vector<std::size_t>* input_slot) {
    std::vector<NodeState> stored;
    stored.reserve(views.size());
    for (std::size_t k = 0; k < by_name->size(); ++k) {
      stored.push_back(views[(*by_name)[k]]);  // a copy: its GPUs allocated in order
      (*input_slot)[(*by_name)[k]] = k;
      (*by_name)[k] = k;
    }
    return stored;
  }

  // Brings v's verdicts up to date for `pod`'s shape. indexed keeps, per shape,
  // only the GPUs chosen per node and the max-tree (whose leaves are the scores
  // of the feasible nodes); the plain path keeps each node's version, verdict
  // and score.
  void Refresh(const PodDemand& pod, ShapeVerdicts* v, FgdSeedRun* run) {
    ++pod_number_;  // CollectDirty's stamp, one per refreshed shape
    const bool first = indexed_ ? v->best.empty() : v->version.empty();
    if (first) Reset(v);
    CollectDirty(v, first, run);
    Rescore(pod, v, first, run);
    if (indexed_ && first) tree_.Build(v->best);
  }

  // Places the pod on `chosen` (v's GPUs there), or fails it (-1), and records
  // the cluster after it.
  void Settle(const PodDemand& pod, int chosen, const Verdicts& v, FgdSeedRun* run) {
    rec_.arrived += PodMilliTotal(pod);
    if (chosen < 0) {
      ++run->failed;
      run->placement.push_back(-1);
    } else {
      Apply(pod, chosen, v.gpus[chosen], run);
    }
    rec_.frag = frag_total_;
    records_.push_back(rec_);
  }

  // The look-ahead's inputs: the pod's candidates (node, score, GPUs) best first
  // in tie order, and the next pod's best and second-best scores over all nodes.
  struct Candidate {
    std::size_t node;
    double score;
    GpuSet gpus;
  };

  // The plain path: every node's verdicts scanned (the indexed path's oracle).
  void AheadByScan(const Verdicts& v, const Verdicts& w) {
    ahead_ = NextPodBest{};
    for (std::size_t n : by_name_)  // tie order: the first of equal bests
      if (w.ok[n]) ahead_.Offer(n, w.score[n]);
    order_.clear();
    for (std::size_t n : by_name_)
      if (v.ok[n] && v.score[n] > kNone) order_.push_back(n);
    const std::size_t m = std::min(kLookAheadCandidates, order_.size());
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(m), order_.end(),
                      [&](std::size_t a, std::size_t b) {
                        return v.score[a] != v.score[b] ? v.score[a] > v.score[b]
                                                        : rank_[a] < rank_[b];
                      });
    candidates_.clear();
    for (std::size_t k = 0; k < m; ++k)
      candidates_.push_back({order_[k], v.score[order_[k]], v.gpus[order_[k]]});
  }

  // The indexed path: the leftmost maxima of the shapes' max-trees, each taken
  // out while the next is looked for and put back after.
  void AheadIndexed(ShapeVerdicts& v, ShapeVerdicts& w) {
    candidates_.clear();
    while (candidates_.size() < kLookAheadCandidates) {
      const std::size_t at = tree_.Leftmost(v.best);
      if (at == std::string::npos) break;
      const std::size_t n = by_name_[at];
      candidates_.push_back({n, v.best[at], v.gpus[n]});
      tree_.Set(v.best, at, kNone);
    }
    for (const Candidate& c : candidates_) tree_.Set(v.best, rank_[c.node], c.score);
    ahead_ = NextPodBest{};
    const std::size_t first = tree_.Leftmost(w.best);
    if (first == std::string::npos) return;
    ahead_.best = w.best[first];
    ahead_.best_at = by_name_[first];
    tree_.Set(w.best, first, kNone);
    if (const std::size_t second = tree_.Leftmost(w.best); second != std::string::npos)
      ahead_.second = w.best[second];
    tree_.Set(w.best, first, ahead_.best);
  }

  // Of candidates_, the node ChooseLookingAhead chooses; -1 when there is none.
  int BestAhead(const PodDemand& pod, const PodDemand& next, FgdSeedRun* run) {
    std::vector<AheadCandidate> options;
    options.reserve(candidates_.size());
    for (const Candidate& c : candidates_) {
      NodeState after = views_[c.node];
      ApplyTracePod(&after, pod, c.gpus, +1);
      const NodeState* one[] = {&after};
      runner_->Evaluate(next, one, RunOptions{false, false}, &eval_, &eval_scratch_);
      ++run->node_evaluations;
      const NodeResult& r = eval_.nodes[0];
      options.push_back({c.node, c.score, r.feasible() ? r.score : kNone});
    }
    const std::size_t k = ChooseLookingAhead(options, ahead_);
    return k == options.size() ? -1 : static_cast<int>(options[k].node);
  }

  // The pod's shape's verdicts (with the cache), or a scratch set cleared.
  ShapeVerdicts* VerdictsOf(const PodDemand& pod) {
    if (!cache_) {
      scratch_verdicts_.version.clear();
      return &scratch_verdicts_;
    }
    const Shape key{pod.cpu_milli, pod.memory_request, pod.gpu_count, pod.gpu_milli,
                    pod.gpu_models};
    auto [it, fresh] = shape_ids_.try_emplace(key, static_cast<int>(verdicts_.size()));
    if (fresh) verdicts_.push_back({});
    return &verdicts_[it->second];
  }

  void Reset(ShapeVerdicts* v) const {
    if (!indexed_) {
      v->Reset(views_.size());
      return;
    }
    v->best.assign(tree_.size(), kNone);
    if (v->dead.empty()) v->dead.assign(views_.size(), 0);  // else kept over a relearning
    v->gpus.assign(views_.size(), GpuSet());
  }

  // The nodes to (re-)evaluate for a pod of v's shape, into dirty_ and dirty_index_.
  void CollectDirty(ShapeVerdicts* v, bool first_of_shape, FgdSeedRun* run) {
    dirty_.clear();
    dirty_index_.clear();
    if (indexed_ && !first_of_shape) {
      run->changes_walked += changes_.size() - v->synced;
      // Exactly the nodes placed on since this shape's last pod have changed
      // (it re-scored every changed node then); a node is listed per placement.
      for (std::size_t i = v->synced; i < changes_.size(); ++i) {
        const std::size_t n = changes_[i];
        // Pods are only ever added, so a node's CPU, memory, GPU shares and load
        // only shrink or grow: one a shape could not use stays so.
        if (seen_[n] == pod_number_ || v->dead[n]) continue;
        seen_[n] = pod_number_;
        dirty_index_.push_back(n);
      }
      std::sort(dirty_index_.begin(), dirty_index_.end());
    } else if (indexed_) {
      for (std::size_t n = 0; n < views_.size(); ++n)
        if (!v->dead[n]) dirty_index_.push_back(n);
    } else {
      v->ForEachStale(node_version_, [&](std::size_t n) {
        dirty_.push_back(&views_[n]);
        dirty_index_.push_back(n);
      });
    }
    v->synced = changes_.size();
    run->nodes_rescored += dirty_index_.size();
  }

  // Evaluates the dirty nodes (two_stage: filters only) into v.
  void Rescore(const PodDemand& pod, ShapeVerdicts* v, bool first_of_shape, FgdSeedRun* run) {
    if (indexed_) {
      RescoreByClass(pod, v, first_of_shape, run);
      return;
    }
    if (dirty_.empty()) return;
    (two_stage_ ? *fit_ : *runner_)
        .Evaluate(pod, dirty_, RunOptions{false, false}, &eval_, &eval_scratch_);
    run->node_evaluations += dirty_.size();
    for (std::size_t k = 0; k < dirty_.size(); ++k)
      v->Store(dirty_index_[k], node_version_[dirty_index_[k]], eval_.nodes[k]);
  }

  // indexed: evaluates the first dirty node of each class and gives its result
  // to the others of its class.
  void RescoreByClass(const PodDemand& pod, ShapeVerdicts* v, bool first_of_shape,
                      FgdSeedRun* run) {
    if (dirty_index_.empty()) return;
    ++class_stamp_;
    class_seen_.resize(classes_->Count(), 0);
    class_slot_.resize(classes_->Count());
    dirty_.clear();
    slot_of_.clear();
    for (std::size_t n : dirty_index_) {
      const std::uint32_t c = classes_->Of(n);
      if (class_seen_[c] != class_stamp_) {
        class_seen_[c] = class_stamp_;
        class_slot_[c] = static_cast<std::uint32_t>(dirty_.size());
        dirty_.push_back(&views_[n]);
      }
      slot_of_.push_back(class_slot_[c]);
    }
    runner_->Evaluate(pod, dirty_, RunOptions{false, false}, &eval_, &eval_scratch_);
    run->node_evaluations += dirty_.size();
    for (std::size_t k = 0; k < dirty_index_.size(); ++k) {
      const std::size_t n = dirty_index_[k];
      const NodeResult& r = eval_.nodes[slot_of_[k]];
      v->gpus[n] = r.gpus;
      // Infeasible, NaN and −∞ scores are never chosen by the scan either.
      const double leaf = r.feasible() && r.score > kNone ? r.score : kNone;
      v->dead[n] = r.feasible() ? 0 : 1;
      v->best[n] = leaf;  // stored in tie order: node index and leaf are one
    }
    if (!first_of_shape) tree_.Repair(v->best, dirty_index_, repair_blocks_);
  }

  // two_stage: the policy's scores of the nodes the fit left feasible.
  ShapeVerdicts* ScoreFeasible(const PodDemand& pod, const Verdicts& fit, FgdSeedRun* run) {
    dirty_.clear();
    dirty_index_.clear();
    for (std::size_t n = 0; n < views_.size(); ++n)
      if (fit.ok[n]) {
        dirty_.push_back(&views_[n]);
        dirty_index_.push_back(n);
      }
    scored_.ok.assign(views_.size(), 0);
    scored_.score.resize(views_.size());
    scored_.gpus.resize(views_.size());
    if (!dirty_.empty()) {
      runner_->Evaluate(pod, dirty_, RunOptions{false, false}, &eval_, &eval_scratch_);
      run->node_evaluations += dirty_.size();
    }
    for (std::size_t k = 0; k < dirty_.size(); ++k) {
      const std::size_t n = dirty_index_[k];
      const NodeResult& r = eval_.nodes[k];
      scored_.ok[n] = r.feasible() ? 1 : 0;
      scored_.score[n] = r.score;
      scored_.gpus[n] = r.gpus;
    }
    return &scored_;
  }

  // selectHost: the highest score; ties to the smallest node name (the authors'
  // patched scheduler) or uniformly at random (stock kube-scheduler). -1: none.
  int ChooseByScan(const Verdicts& v) {
    return SelectHost(v.ok.data(), v.score.data(), by_name_,
                      lowest_name_ ? TieBreak::kFirst : TieBreak::kReservoir, tie_rng_);
  }

  // Places the pod on `gpus` of node `chosen`.
  void Apply(const PodDemand& pod, int chosen, GpuSet gpus, FgdSeedRun* run) {
    NodeState& node = views_[chosen];
    if (gpus.Count() != pod.gpu_count)
      throw InputError{"fgd-inflation: a policy placed no GPUs for " + pod.name};
    node.gpu_pod_kinds |= GpuPodKind(pod);
    ApplyTracePod(&node, pod, gpus, +1);
    ++node_version_[chosen];
    if (indexed_) {
      changes_.push_back(static_cast<std::uint32_t>(chosen));
      classes_->Update(static_cast<std::size_t>(chosen), node);
    }
    frag_total_ -= node_frag_[chosen];
    frag_total_ += node_frag_[chosen] = NodeFragmentation(node, tasks_);
    rec_.allocated += PodMilliTotal(pod);
    ++run->placed;
    run->placement.push_back(static_cast<int>(input_of_[chosen]));
  }

  const std::vector<FgdTask>& tasks_;  // the measure's target workload (the list's)
  const Runner* runner_;
  const std::unique_ptr<Runner> fit_;  // two_stage: milligpu alone
  const bool cache_, two_stage_, lowest_name_, indexed_;
  std::vector<std::size_t> input_slot_;  // per input node: its index in views_
  std::vector<std::size_t> input_of_;    // per node of views_: its input index
  std::vector<NodeState> views_;
  const std::vector<std::size_t> by_name_;  // the tie order
  std::vector<double> node_frag_;
  double frag_total_ = 0;
  std::map<Shape, int> shape_ids_;
  std::vector<ShapeVerdicts> verdicts_;  // per shape
  ShapeVerdicts scored_;                 // two_stage: this pod's scores
  ShapeVerdicts scratch_verdicts_;       // without the cache
  std::vector<std::uint32_t> node_version_;
  std::vector<std::uint32_t> changes_;       // indexed: node indices, one per placement
  std::vector<std::uint32_t> seen_;          // indexed: per node, the pod that listed it last
  std::vector<std::size_t> rank_;            // per node: position in tie order
  std::optional<TraceNodeClasses> classes_;  // indexed
  std::uint32_t class_stamp_ = 0;            // RescoreByClass's, one per call
  std::vector<std::uint32_t> class_seen_;    // per class: the call that saw it last
  std::vector<std::uint32_t> class_slot_;    // per class: its node's place in dirty_
  std::vector<std::uint32_t> slot_of_;       // per dirty node: its class's place
  std::vector<std::size_t> repair_blocks_;   // LeftmostMax::Repair's
  const LeftmostMax tree_;
  Random tie_rng_;
  std::uint32_t pod_number_ = 0;
  Evaluation eval_;
  EvaluationScratch eval_scratch_;
  std::vector<const NodeState*> dirty_;
  std::vector<std::size_t> dirty_index_;
  std::vector<Record> records_;
  Record rec_;
  std::vector<Candidate> candidates_;  // look-ahead
  std::vector<std::size_t> order_;     // look-ahead, plain path
  NextPodBest ahead_;
};

// fgd-learned relearns its target workload after the 1st, 2nd, 4th, … 1024th
// pod, often while little is known, then every time as many pods have arrived as
// the cluster has nodes (at least 1024). Each relearning re-scores every node for
// the shapes that follow, so relearnings then cost work in proportion to the pods:
// at every 1024 pods, 16 copies of openb took 232x the time of one.
bool RelearnAfter(std::uint64_t pods_seen, std::size_t nodes) {
  constexpr std::uint64_t kDoubling = 1024;
  if (pods_seen <= kDoubling) return (pods_seen & (pods_seen - 1)) == 0;
  return pods_seen % std::max<std::uint64_t>(kDoubling, nodes) == 0;
}

}  // namespace

FgdSeedRun FgdExperiment::Run(const std::string& policy, std::uint64_t seed) const {
  Random rng(seed);
  const std::vector<int> clone_of = SeedWorkload(pods_, options_, capacity_milli_, rng);
  const std::vector<FgdTask>& tasks = impl_->tasks;
  // fgd-learned is FGD whose target workload is learned from the pods as they
  // arrive (TaskTypeLearner), not read from the list: none known before the first;
  // load-aware-frag-learned is what tidal serve runs with fgd's `tasks: learned`
  // without a queue to look ahead in, load-aware-frag-learned-ahead with one (serve's
  // lookAhead).
  const bool learned = FgdPolicyLearns(policy);
  // fgd-lookahead, load-aware-frag-ahead and load-aware-frag-learned-ahead see the
  // next pod in the queue (PlaceLookingAhead), after learning from the pod placed.
  const bool lookahead = FgdPolicyLooksAhead(policy);
  if (policy == "fgd-fill" && !options_.solve_lp)
    throw InputError{
        "policy fgd-fill: needs an LP solver for its fill plan (tidal simulate "
        "runs glpsol: apt-get install glpk-utils)"};
  std::unique_ptr<Runner> runner = MakeTracePolicy(policy, FgdKnownPolicyNames(), "fgd-inflation",
                                                   learned ? std::vector<FgdTask>{} : tasks, seed,
                                                   options_.fgd_score_step, impl_->fill_plan);
  std::vector<NodeState> views = ClusterViews(nodes_, policy);
  std::vector<std::size_t> by_name = TieOrder(views, options_.permute_node_names, rng);
  FgdOptions placing = options_;
  if (lookahead) placing.cache_by_shape = true;  // it keeps the verdicts of two shapes
  SeedPlacer placer(placing, policy, seed, tasks, *runner, std::move(views), std::move(by_name),
                    clone_of.size());
  // load-aware-frag-learned(-ahead) learns as tidal serve does (WorkloadLearner's
  // half-life, bound, popularity cut, GPU pods only).
  const bool as_serve =
      policy == "load-aware-frag-learned" || policy == "load-aware-frag-learned-ahead";
  TaskTypeLearner learner(as_serve ? kLearnedWorkloadHalfLifePods : options_.learn_half_life_pods,
                          as_serve ? kLearnedWorkloadMaxTypes : kLearnedTypesMax);
  FgdSeedRun run;
  run.seed = seed;
  run.pods = static_cast<int>(clone_of.size());
  run.placement.reserve(clone_of.size());
  std::vector<int> copies(pods_.size(), 0);
  PodDemand pod, next;  // reused: their strings keep their storage
  for (std::size_t at = 0; at < clone_of.size(); ++at) {
    const traces::OpenbPod& listed = pods_[clone_of[at]];
    const int copy = copies[clone_of[at]]++;
    SetDemand(listed, copy, static_cast<int>(at), &pod);
    // fgd-learned counts every pod, as FGD's workload from the list does;
    // load-aware-frag-learned only those tidal serve's learner counts.
    if (learned && (!as_serve || WorkloadLearner::Learns(pod))) {
      learner.Observe(pod);
      if (RelearnAfter(learner.pods_seen(), nodes_.size())) {
        std::vector<FgdTask> learned_tasks = WeighByScarcity(
            learner.Tasks(as_serve ? kLearnedWorkloadPopularityPct : options_.popularity_pct),
            placer.Nodes(),
            options_.scarcity_exponent.value_or(as_serve ? kLearnedWorkloadScarcityExponent : 0));
        runner = MakeTracePolicy(policy, FgdKnownPolicyNames(), "fgd-inflation", learned_tasks,
                                 seed, options_.fgd_score_step);
        placer.UsePolicy(*runner);
      }
    }
    if (lookahead && at + 1 < clone_of.size()) {
      // The next pod as the queue shows it (its name does not matter to a score).
      const traces::OpenbPod& queued = pods_[clone_of[at + 1]];
      SetDemand(queued, 0, static_cast<int>(at + 1), &next);
      placer.PlaceLookingAhead(pod, next, &run);
    } else {
      placer.Place(pod, &run);
    }
  }
  Discretise(placer.records(), capacity_milli_, &run);
  return run;
}

std::vector<std::string> FgdExperiment::PlacementNames(const FgdSeedRun& run) const {
  std::vector<std::string> names;
  names.reserve(run.placement.size());
  for (int n : run.placement) names.push_back(n < 0 ? std::string() : nodes_[n].name);
  return names;
}

std::vector<PodDemand> FgdExperiment::ArrivedBy100(Random& rng) const {
  const std::vector<int> clone_of = SeedWorkload(pods_, options_, capacity_milli_, rng);
  std::vector<PodDemand> arrived;
  std::vector<int> copies(pods_.size(), 0);
  std::int64_t total = 0;
  for (int i : clone_of) {
    const traces::OpenbPod& listed = pods_[i];
    if (total + listed.TotalMilli() > capacity_milli_) break;
    total += listed.TotalMilli();
    const int copy = copies[i]++;
    arrived.push_back(ToDemand(listed, copy, static_cast<int>(arrived.size())));
  }
  return arrived;
}

PackingLp FgdExperiment::PackingLpFor(std::uint64_t seed) const {
  Random rng(seed);
  const std::vector<PodDemand> arrived = ArrivedBy100(rng);
  return BuildPackingLp(ClusterViews(nodes_, "fgd"), arrived);
}

double FgdExperiment::OfflineUnallocPct(const std::string& policy, FgdOfflineOrder order,
                                        std::uint64_t seed) const {
  Random rng(seed);
  std::vector<PodDemand> arrived = ArrivedBy100(rng);
  // Each pod's share of the cluster's GPUs and CPU (so that both weigh alike).
  double cluster_cpu = 0;
  for (const auto& n : nodes_) cluster_cpu += static_cast<double>(n.cpu_milli);
  auto size = [&](const PodDemand& p) {
    const double gpu = static_cast<double>(PodMilliTotal(p)) / static_cast<double>(capacity_milli_);
    const double cpu = cluster_cpu > 0 ? static_cast<double>(p.cpu_milli) / cluster_cpu : 0;
    return order == FgdOfflineOrder::kGpuFirst ? std::pair{gpu, cpu} : std::pair{gpu + cpu, 0.0};
  };
  std::stable_sort(arrived.begin(), arrived.end(),
                   [&](const PodDemand& a, const PodDemand& b) { return size(a) > size(b); });
  const std::unique_ptr<Runner> runner =
      MakeTracePolicy(policy, FgdKnownPolicyNames(), "fgd-inflation", impl_->tasks, seed,
                      options_.fgd_score_step, impl_->fill_plan);
  std::vector<NodeState> views = ClusterViews(nodes_, policy);
  std::vector<std::size_t> by_name = TieOrder(views, options_.permute_node_names, rng);
  SeedPlacer placer(options_, policy, seed, impl_->tasks, *runner, std::move(views),
                    std::move(by_name), arrived.size());
  FgdSeedRun run;
  for (const PodDemand& pod : arrived) placer.Place(pod, &run);
  const std::int64_t allocated = placer.records().empty() ? 0 : placer.records().back().allocated;
  return 100.0 - 100.0 * static_cast<double>(allocated) / static_cast<double>(capacity_milli_);
}

namespace {

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The sample standard deviation (0 for fewer than two values).
double SampleSd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = MeanOf(v);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace

double FgdOfflineResult::Mean() const { return MeanOf(unalloc); }

double FgdOfflineResult::Sd() const { return SampleSd(unalloc); }

double FgdPolicyResult::UnallocMean(int pct) const {
  double s = 0;
  for (const auto& r : runs) s += 100.0 - r.alloc_pct.at(pct);
  return runs.empty() ? 0 : s / static_cast<double>(runs.size());
}

double FgdPolicyResult::FragRatioMean(int pct) const {
  double s = 0;
  for (const auto& r : runs) s += r.frag_ratio_pct.at(pct);
  return runs.empty() ? 0 : s / static_cast<double>(runs.size());
}

double FgdPolicyResult::AllocSd(int pct) const {
  std::vector<double> alloc;
  for (const auto& r : runs) alloc.push_back(r.alloc_pct.at(pct));
  return SampleSd(alloc);
}

namespace {
constexpr int kReportPcts[] = {90, 95, 100, 130};

std::string Num(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "null"; }
}  // namespace

std::string RenderFgdJson(const FgdReport& report) {
  std::string out = "{\n  \"experiment\": \"fgd-inflation\",\n";
  out += fmt::format("  \"workload\": \"{}\",\n", report.workload);
  out += "  \"seeds\": [";
  for (std::size_t i = 0; i < report.seeds.size(); ++i)
    out += (i ? ", " : "") + std::to_string(report.seeds[i]);
  out += "],\n  \"policies\": [";
  for (std::size_t i = 0; i < report.policies.size(); ++i) {
    const FgdPolicyResult& p = report.policies[i];
    out += i ? ",\n    {" : "\n    {";
    out += fmt::format("\"name\": \"{}\", \"unalloc_pct\": {{", p.name);
    for (std::size_t k = 0; k < std::size(kReportPcts); ++k)
      out += fmt::format("{}\"{}\": {}", k ? ", " : "", kReportPcts[k],
                         Num(p.UnallocMean(kReportPcts[k])));
    out += fmt::format("}}, \"frag_ratio_pct\": {{\"100\": {}}}, \"alloc_pct_sd_100\": {}",
                       Num(p.FragRatioMean(100)), Num(p.AllocSd(100)));
    int placed = 0, failed = 0, pods = 0;
    for (const auto& r : p.runs) {
      placed += r.placed;
      failed += r.failed;
      pods += r.pods;
    }
    out += fmt::format(", \"pods\": {}, \"placed\": {}, \"failed\": {}}}", pods, placed, failed);
  }
  out += "\n  ]";
  if (!report.offline.empty()) {
    out += ",\n  \"offline\": [";
    for (std::size_t i = 0; i < report.offline.size(); ++i)
      out += fmt::format("{}\n    {{\"name\": \"{}\", \"unalloc_pct_100\": {}, \"sd\": {}}}",
                         i ? "," : "", report.offline[i].name, Num(report.offline[i].Mean()),
                         Num(report.offline[i].Sd()));
    out += "\n  ]";
  }
  out += "\n}\n";
  return out;
}

std::string RenderFgdTable(const FgdReport& report, const std::vector<traces::FgdExpected>& paper) {
  auto find = [&](const std::string& policy, int pct) -> const traces::FgdExpected* {
    const std::string name = FgdPaperName(policy);
    for (const auto& e : paper)
      if (e.workload == report.workload && e.policy == name && e.arrived_pct == pct) return &e;
    return nullptr;
  };
  std::string seeds;
  for (auto s : report.seeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(s);
  std::string out =
      fmt::format("fgd-inflation on {} ({} GPUs), seeds {}: unallocated GPU % at arrived %\n\n",
                  report.workload, report.capacity_milli / kMilliPerGpu, seeds);
  out += fmt::format("{:<18} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7} | {:>7} {:>7} {:>7} {:>7} {:>8}\n",
                     "policy", "90", "95", "100", "130", "frag%idle", "sd100", "paper90", "paper95",
                     "paper100", "paper130", "vs paper");
  for (const auto& p : report.policies) {
    out += fmt::format("{:<18} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7} |", p.name,
                       Num(p.UnallocMean(90)), Num(p.UnallocMean(95)), Num(p.UnallocMean(100)),
                       Num(p.UnallocMean(130)), Num(p.FragRatioMean(100)), Num(p.AllocSd(100)));
    for (int pct : kReportPcts) {
      const auto* e = find(p.name, pct);
      out += fmt::format(" {:>7}", e ? Num(e->unalloc_pct_mean) : "-");
    }
    const auto* e100 = find(p.name, 100);
    if (e100 && e100->unalloc_pct_mean > 0)
      out += fmt::format(" {:>+7.1f}%", 100.0 * (p.UnallocMean(100) - e100->unalloc_pct_mean) /
                                            e100->unalloc_pct_mean);
    out += "\n";
  }
  out +=
      "\nunallocated = 100 − allocated GPU share; frag%idle: FGD's fragmented share of the idle "
      "GPUs at 100 %;\n"
      "sd100: sd of allocated % over seeds at 100 %; paper: the FGD authors' published means over "
      "seeds 42–51.\n";
  if (!report.offline.empty()) {
    out +=
        "\noffline (the pods arrived by 100 %, all known in advance: placed largest first, or "
        "the LP relaxation's bound):\n";
    for (const auto& r : report.offline)
      out += fmt::format("{:<30} {:>7} ± {} unallocated at 100 %\n", r.name, Num(r.Mean()),
                         Num(r.Sd()));
  }
  return out;
}

}  // namespace tidal::sim
