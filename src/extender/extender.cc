#include "tidal/extender/extender.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "extender/fastpath/filter_memo.h"
#include "extender/fastpath/node_index.h"
#include "extender/fastpath/parts.h"
#include "tidal/core/text.h"
#include "tidal/metrics/reservations.h"
#include "tidal/policy/extender_score.h"
#include "tidal/policy/fallback.h"
#include "tidal/policy/learned_workload.h"
#include "tidal/policy/look_ahead.h"

namespace tidal::extender {

std::vector<double> LatencyBuckets() {
  return {50e-6, 100e-6, 200e-6, 300e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 1};
}

std::vector<double> BindLatencyBuckets() {
  return {1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2, 5};
}

struct Extender::Context {
  ExtenderArgs args;
  ArgsDecoder decoder;
  std::vector<const NodeState*> nodes;
  std::vector<std::string_view> names;
  std::vector<RequestPart> parts;
  std::vector<std::uint64_t> passed;  // a filter's passing nodes, for RememberFilter
  // Served a request too large to keep its scratch for the next one.
  bool outsized = false;
};

Extender::Extender(PolicyConfig config, const ViewStore& store, const Clock& clock,
                   std::shared_ptr<spdlog::logger> log, ExtenderMetrics* metrics, int parallelism)
    : config_(std::move(config)),
      store_(store),
      clock_(clock),
      log_(std::move(log)),
      metrics_(metrics),
      parallelism_(static_cast<std::size_t>(std::max(1, parallelism))),
      workers_(std::make_unique<ForkJoin>(std::max(1, parallelism) - 1)) {
  runners_.push_back(std::make_unique<Runner>(config_));
  runners_.push_back(std::make_unique<Runner>(MakeFallbackRunner(config_, 1)));
  runners_.push_back(std::make_unique<Runner>(MakeFallbackRunner(config_, 2)));
  const WorkloadLearnerUse use = UseOfWorkloadLearner(config_);
  learns_workload_ = use.workload;
  if (use.any())
    for (auto& r : runners_) r->SetLearnedWorkload(&workload_);
  filter_instruments_ = InstrumentsFor("filter");
  prioritize_instruments_ = InstrumentsFor("prioritize");
  reused_answer_ = &metrics_->prioritize_reuse.With({"answer"});
  reused_verdicts_ = &metrics_->prioritize_reuse.With({"verdicts"});
  reused_nothing_ = &metrics_->prioritize_reuse.With({"none"});
  start_ms_ = clock_.NowMs();
}

Extender::~Extender() = default;

std::unique_ptr<Extender::Context> Extender::Acquire() {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (pool_.empty()) return std::make_unique<Context>();
  auto c = std::move(pool_.back());
  pool_.pop_back();
  return c;
}

void Extender::Release(std::unique_ptr<Context> c) {
  // A context that served an outsized request would keep its memory for as long
  // as it is pooled: it goes instead (docs/hardening.md, the 10^6-name request).
  if (c->outsized) return;
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (pool_.size() < 64) pool_.push_back(std::move(c));
}

int Extender::Stage(TimeMs now_ms, const ClusterView& view) const {
  const int stage = StageBySource(now_ms, view);
  return stage == 2 && !GoldenPoolHasNodes(view) ? 1 : stage;
}

bool Extender::GoldenPoolHasNodes(const ClusterView& view) const {
  if (golden_in_payloads_.load()) return true;
  std::lock_guard<std::mutex> lock(golden_mu_);
  const std::weak_ptr<const NodeMap>& checked = golden_checked_;
  const bool same =
      !checked.owner_before(view.nodes) && !view.nodes.owner_before(checked) && !checked.expired();
  if (same) return golden_has_nodes_;
  golden_has_nodes_ = std::any_of(view.nodes->begin(), view.nodes->end(),
                                  [&](const auto& kv) { return InGoldenPool(kv.second.labels); });
  golden_checked_ = view.nodes;
  return golden_has_nodes_;
}

bool Extender::InGoldenPool(const Labels& labels) const {
  return std::all_of(config_.fallback.golden_pool.begin(), config_.fallback.golden_pool.end(),
                     [&](const auto& kv) {
                       const auto it = labels.find(kv.first);
                       return it != labels.end() && it->second == kv.second;
                     });
}

int Extender::StageBySource(TimeMs now_ms, const ClusterView& view) const {
  const SourceHealth& h = view.health;
  // A fetch that hangs is a failure once the next snapshot is overdue. A fetch is
  // kQueriesPerFetch queries, each bounded by queryTimeout: a slow source that still
  // answers within it must not flap into stage 1 between two successes.
  const TimeMs overdue = (h.last_success_ms ? h.last_success_ms : start_ms_) +
                         config_.metric_cache_ttl_ms + kQueriesPerFetch * config_.query_timeout_ms +
                         1'000;
  TimeMs failing_since = h.failing_since_ms;
  if (failing_since == 0) {
    if (h.last_success_ms != 0 && now_ms <= overdue) return 0;
    failing_since =
        h.last_success_ms != 0 ? overdue : start_ms_;  // never succeeded: no metrics yet
  }
  return now_ms - failing_since < config_.fallback.stage2_after_ms ? 1 : 2;
}

Extender::StageVerdict Extender::StageNow(TimeMs now_ms, const ClusterView& view) const {
  const int by_source = StageBySource(now_ms, view);
  const bool golden_empty = by_source == 2 && !GoldenPoolHasNodes(view);
  return {golden_empty ? 1 : by_source, golden_empty};
}

int Extender::ObserveStage(TimeMs now_ms, const ClusterView& view) {
  const StageVerdict v = StageNow(now_ms, view);
  NoteStage(v, view);
  return v.stage;
}

void Extender::NoteStage(StageVerdict v, const ClusterView& view) {
  const int stage = v.stage;
  if (last_golden_empty_.exchange(v.golden_empty) != v.golden_empty) {
    metrics_->golden_pool_empty.Set(v.golden_empty ? 1 : 0);
    if (v.golden_empty)
      log_->error(
          "fallback: stage 2 is due but no node is in the golden pool: staying on stage 1 "
          "(remaining allocatable GPUs); label nodes with fallback.goldenPool");
  }
  const int before = last_stage_.exchange(stage);
  if (before != stage) {
    metrics_->fallback_stage.Set(stage);
    if (before != -1 || stage != 0) {
      metrics_->stage_transitions.With({std::to_string(stage)}).Add(1);
      if (stage == 0) {
        log_->info("fallback: metrics are back, normal scheduling (was stage {})", before);
      } else {
        log_->warn(
            "fallback: stage {} ({}; last error: {})", stage,
            stage == 1 ? "scoring by remaining allocatable GPUs" : "only the golden pool is used",
            view.health.last_error.empty() ? "snapshot overdue" : view.health.last_error);
      }
    }
  }
}

Extender::VerbInstruments Extender::InstrumentsFor(const std::string& verb) {
  return {&metrics_->requests.With({verb, "ok"}), &metrics_->requests.With({verb, "bad_request"}),
          &metrics_->duration.With({verb}, LatencyBuckets())};
}

Reply Extender::Filter(std::string_view body) { return Decide("filter", body, true); }
Reply Extender::Prioritize(std::string_view body) { return Decide("prioritize", body, false); }

// One request on its way through Decide's steps.
struct Extender::Decision {
  Decision(std::string_view v, bool f) : verb(v), filter(f) {}
  std::string_view verb;
  bool filter;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Context> ctx;
  std::shared_ptr<const ClusterView> view;
  TimeMs now = 0;
  StageVerdict stage_verdict;
  // Prioritize: the last filter's memo when it is for this view and stage.
  std::shared_ptr<const FilterMemo> memo;
  PodDemand pod;
  std::size_t n = 0;  // candidates
  std::size_t part_size = 0, part_count = 0;
  std::shared_ptr<FilterMemo> new_memo;  // filter: what it leaves for the prioritize
  const NodeIndex* index = nullptr;      // when every map of the view is indexed
  int feasible = 0;
  int unknown = 0;
  std::string pod_reason;  // filter, a pod unresolvable everywhere: every node's reason
  Reply reply;

  int stage() const { return stage_verdict.stage; }
  const NodeResult& Result(std::size_t i) const {
    const RequestPart& part = ctx->parts[i / part_size];
    return part.eval.nodes[i - part.begin];
  }
  const Status& PodStatus() const { return ctx->parts[0].eval.pod_status; }
};

// The pipeline: reuse an answer, decode, reuse verdicts, evaluate, encode. The
// steps below are the fast path's; docs/extender.md explains each reuse.
Reply Extender::Decide(std::string_view verb, std::string_view body, bool filter) {
  Decision d(verb, filter);
  // Requests being decided now, this one included.
  struct InFlight {
    std::atomic<int>& n;
    explicit InFlight(std::atomic<int>& count) : n(count) { n.fetch_add(1); }
    ~InFlight() { n.fetch_sub(1); }
  } in_flight(in_flight_);
  // A large filter request decided alone will want the helpers: they wake now,
  // while it is decoded, rather than when its parts are ready.
  if (filter && parallelism_ > 1 && body.size() >= kPrepareBytes &&
      in_flight_.load(std::memory_order_relaxed) == 1)
    workers_->Prepare();
  d.ctx = Acquire();
  d.view = store_.Load();
  d.now = clock_.NowMs();
  d.stage_verdict = StageNow(d.now, *d.view);
  if (!filter) d.memo = CurrentMemo(*d.view, d.stage());
  if (ReuseAnswer(d, body)) return Finish(d, true);
  if (Status s = DecodeRequest(d, body); !s.ok()) return BadRequest(d, s);
  if (filter) LearnWorkload(d.pod);
  if (ReuseVerdicts(d)) return Finish(d, true);
  EvaluateParts(d);
  if (filter) {
    LookAhead(d, d.new_memo->priorities);
    EncodeFilter(d);
  } else {
    EncodePrioritize(d);
  }
  if (log_->should_log(spdlog::level::debug))
    LogDecision(d, d.pod.Key(), d.n, d.feasible, fmt::format("{} unknown", d.unknown));
  return Finish(d, true);
}

Reply Extender::Finish(Decision& d, bool ok) {
  if (d.ctx) Release(std::move(d.ctx));
  const VerbInstruments& inst = d.filter ? filter_instruments_ : prioritize_instruments_;
  (ok ? inst.ok : inst.bad_request)->Add(1);
  inst.duration->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - d.t0).count());
  return std::move(d.reply);
}

Reply Extender::BadRequest(Decision& d, const Status& s) {
  log_->warn("{}: bad request: {}", d.verb, s.reason());
  if (d.filter) {
    // kube-scheduler reads a non-empty Error as a failed call (the pod is retried),
    // never as "no node fits".
    FilterResult r;
    r.error = "tidal: " + s.reason();
    EncodeFilterResult(r, &d.reply.body);
  } else {
    d.reply.http_status = 400;
    d.reply.body = "tidal: " + s.reason();
  }
  return Finish(d, false);
}

// One debug line per decision: pod, verdict counts, time.
void Extender::LogDecision(const Decision& d, std::string_view pod_key, std::size_t nodes,
                           int feasible, std::string_view how) const {
  if (!log_->should_log(spdlog::level::debug)) return;
  log_->debug(
      "{} {}: {} nodes, {} feasible, {}, stage {}, {:.0f} µs", d.verb, pod_key, nodes, feasible,
      how, d.stage(),
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - d.t0).count());
}

std::shared_ptr<const FilterMemo> Extender::CurrentMemo(const ClusterView& view, int stage) const {
  std::shared_ptr<const FilterMemo> memo;
  {
    std::lock_guard<std::mutex> lock(memo_mu_);
    memo = memo_;
  }
  if (memo && memo->generation == view.generation && memo->stage == stage) return memo;
  return nullptr;
}

// What kube-scheduler sends after the filter, as expected to the byte, is not
// decoded: it is valid (made of the filter's Pod and answer) and asks for the
// filter's survivors' scores, in order.
bool Extender::ReuseAnswer(Decision& d, std::string_view body) {
  const FilterMemo* memo = d.memo.get();
  if (!memo || !IsExpectedPrioritize(*memo, body)) return false;
  NoteStage(d.stage_verdict, *d.view);
  EncodeHostPriorities(memo->names, memo->feasible, memo->priorities, &d.reply.body);
  reused_answer_->Add(1);
  LogDecision(d, memo->pod_key, static_cast<std::size_t>(memo->survivors), memo->survivors,
              "the filter's answer reused");
  return true;
}

Status Extender::DecodeRequest(Decision& d, std::string_view body) {
  Context& ctx = *d.ctx;
  if (Status s = ctx.decoder.Decode(body, DecodeOptions{/*keep_node_json=*/d.filter}, &ctx.args);
      !s.ok())
    return s;
  const ExtenderArgs& args = ctx.args;
  // Without the API watch the view has no labels: the Node objects sent show
  // whether the golden pool has nodes.
  if (d.stage() >= 1 && args.has_nodes && !golden_in_payloads_.load() &&
      std::any_of(args.nodes.begin(), args.nodes.end(),
                  [&](const WireNode& w) { return InGoldenPool(w.labels); })) {
    golden_in_payloads_.store(true);  // from now on the pool is known to have nodes
    if (d.stage_verdict.golden_empty) d.stage_verdict = {2, false};
  }
  NoteStage(d.stage_verdict, *d.view);
  d.pod = ToPodDemand(args.pod);
  // Candidates: the Node objects when sent (they carry labels and allocatable), else names.
  d.n = args.has_nodes ? args.nodes.size() : args.node_names.size();
  ctx.outsized = d.n > kMaxPooledCandidates;
  if (d.n > kMaxCandidates)
    return Status::Error((args.has_nodes ? "Nodes: " : "NodeNames: ") + std::to_string(d.n) +
                         " candidates, expected at most " + std::to_string(kMaxCandidates) +
                         " (kube-scheduler sends at most the cluster's nodes)");
  auto& names = ctx.names;
  names.resize(d.n);
  if (args.has_nodes) {
    for (std::size_t i = 0; i < d.n; ++i) names[i] = args.nodes[i].name;
  } else {
    args.node_names.Views(names.data());
  }
  return Status::Ok();
}

// A prioritize for the pod and view of the last filter: its survivors' scores.
bool Extender::ReuseVerdicts(Decision& d) {
  std::vector<HostPriority> list;
  if (!d.memo || !ScoresFromMemo(*d.memo, d.ctx->args.pod_json, d.ctx->names, &list)) return false;
  EncodeHostPriorityList(list, &d.reply.body);
  reused_verdicts_->Add(1);
  // Every candidate found is a survivor of the filter.
  LogDecision(d, d.pod.Key(), d.n, static_cast<int>(d.n), "the filter's verdicts reused");
  return true;
}

// The nodes are resolved, evaluated and (filter) their verdicts written in parts,
// side by side on the pool's threads when the request is large.
void Extender::EvaluateParts(Decision& d) {
  Context& ctx = *d.ctx;
  const ExtenderArgs& args = ctx.args;
  const std::size_t n = d.n;
  const RequestSplit split = SplitRequest(n, parallelism_);
  d.part_size = split.part_size;
  d.part_count = split.part_count;
  ctx.nodes.resize(n);
  if (ctx.parts.size() < d.part_count) ctx.parts.resize(d.part_count);
  if (d.filter) {
    auto m = std::make_shared<FilterMemo>();
    m->pod_json.assign(args.pod_json);
    m->pod_key = d.pod.Key();
    m->generation = d.view->generation;
    m->stage = d.stage();
    if (args.has_nodes) {
      m->names.reserve(n, 16 * n);
      for (const auto& w : args.nodes) m->names.push_back(w.name);
    } else {
      m->names = args.node_names;  // two blocks copied
    }
    m->feasible.resize(n);
    m->priorities.resize(n);
    d.new_memo = std::move(m);
  }
  // Indexed lookups only when every map is indexed (a published view always is).
  d.index = d.view->Indexed() ? d.view->index.get() : nullptr;
  const PartInputs in{*d.view,  d.index,          d.now,    config_.metrics_stale_after_ms,
                      args,     ctx.names,        d.pod,    *runners_[d.stage()],
                      d.filter, d.new_memo.get(), ctx.nodes};
  const auto run_part = [&](int k) {
    RequestPart& part = ctx.parts[k];
    part.begin = std::min(n, k * d.part_size);
    part.end = std::min(n, part.begin + d.part_size);
    EvaluatePart(in, &part);
  };
  if (UseHelpers(n, in_flight_.load(std::memory_order_relaxed))) {
    workers_->Run(static_cast<int>(d.part_count), run_part);
  } else {
    for (std::size_t k = 0; k < d.part_count; ++k) run_part(static_cast<int>(k));
  }
  for (std::size_t k = 0; k < d.part_count; ++k) d.unknown += ctx.parts[k].unknown;
}

void Extender::EncodeFilter(Decision& d) {
  metrics_->unknown_nodes.Set(d.unknown);
  FilterResult r;
  std::vector<std::pair<std::string, int>> rejected_by;
  for (std::size_t k = 0; k < d.part_count; ++k) {
    const RequestPart& part = d.ctx->parts[k];
    d.feasible += part.feasible;
    for (const auto& [label, count] : part.rejected_by) CountRejections(label, count, &rejected_by);
  }
  const bool least_loaded = d.feasible == 0 && d.PodStatus().ok() &&
                            config_.when_all_rejected == WhenAllRejected::kLeastLoaded;
  FillFilterResult(d, least_loaded, &r, &rejected_by);
  // Opt-in (whenAllRejected: least-loaded): rather than Pending, the least
  // loaded node rejected for load alone.
  const std::size_t best = least_loaded && !r.failed.empty() ? LeastLoadedRejected(d) : d.n;
  if (best != d.n) {
    const std::string_view name = d.ctx->names[best];
    r.failed.erase(std::remove_if(r.failed.begin(), r.failed.end(),
                                  [&](const auto& p) { return p.first == name; }),
                   r.failed.end());
    if (r.with_nodes) r.nodes.push_back(&d.ctx->args.nodes[best]);
    if (r.with_node_names) r.node_names.push_back(name);
    d.feasible = 1;
  }
  for (const auto& [label, count] : rejected_by) metrics_->rejections.With({label}).Add(count);
  EncodeFilterResult(r, &d.reply.body);
  RememberPassed(d, best);
  d.new_memo->survivors = d.feasible;
  // The memo is also what /debug/nodes reads the candidates from.
  std::lock_guard<std::mutex> lock(memo_mu_);
  memo_ = std::move(d.new_memo);
}

// The filter's answer: every candidate unresolvable (a bad pod), the parts' own
// encoding joined (NodeNames), or survivors and reasons listed (Nodes, or
// least-loaded about to change the answer).
void Extender::FillFilterResult(Decision& d, bool least_loaded, FilterResult* r,
                                std::vector<std::pair<std::string, int>>* rejected_by) {
  const ExtenderArgs& args = d.ctx->args;
  const auto& names = d.ctx->names;
  FilterMemo& m = *d.new_memo;
  r->with_nodes = args.has_nodes;
  r->with_node_names = args.has_node_names || !args.has_nodes;
  if (const Status& pod_status = d.PodStatus(); !pod_status.ok()) {
    d.pod_reason = "tidal: " + pod_status.reason();  // the answer holds views of it
    SpellOutPercentSigns(&d.pod_reason);
    rejected_by->emplace_back("pod", static_cast<int>(d.n));
    for (std::size_t i = 0; i < d.n; ++i) r->unresolvable.emplace_back(names[i], d.pod_reason);
    return;
  }
  if (!args.has_nodes && !least_loaded) {
    for (std::size_t k = 0; k < d.part_count; ++k) {
      const RequestPart& part = d.ctx->parts[k];
      r->node_names_json.push_back(part.names_json);
      r->failed_json.push_back(part.failed_json);
      r->unresolvable_json.push_back(part.unresolvable_json);
    }
    EncodeNamesArgs(m.pod_json, r->node_names_json, &m.prioritize_body);
    return;
  }
  for (std::size_t i = 0; i < d.n; ++i) {
    if (!m.feasible[i]) continue;
    if (r->with_nodes) r->nodes.push_back(&args.nodes[i]);
    if (r->with_node_names) r->node_names.push_back(names[i]);
  }
  r->failed.reserve(d.n - static_cast<std::size_t>(d.feasible));
  for (std::size_t k = 0; k < d.part_count; ++k) {
    RequestPart& part = d.ctx->parts[k];
    if (part.reasons_encoded) {
      // Only with whenAllRejected: least-loaded, all rejected: the texts again.
      part.reasons.clear();
      for (auto& rej : part.rejections) {
        AppendRejectionText(d.Result(rej.node).status, &part.reasons);
        rej.end = static_cast<std::uint32_t>(part.reasons.size());
      }
    }
    std::uint32_t begin = 0;
    for (const auto& rej : part.rejections) {
      auto& dst = rej.unresolvable ? r->unresolvable : r->failed;
      dst.emplace_back(names[rej.node],
                       std::string_view(part.reasons).substr(begin, rej.end - begin));
      begin = rej.end;
    }
  }
}

// The node with the least GPU memory in use among those rejected for load alone
// (Unfit, with series), or n when there is none.
std::size_t Extender::LeastLoadedRejected(const Decision& d) const {
  const auto& nodes = d.ctx->nodes;
  std::size_t best = d.n;
  for (std::size_t i = 0; i < d.n; ++i) {
    if (d.Result(i).status.code() != Code::kUnfit || !nodes[i]->metrics_known) continue;
    if (best == d.n || nodes[i]->load.gpu_memory < nodes[best]->load.gpu_memory) best = i;
  }
  return best;
}

// Where /bind may bind this pod: the nodes passed, by the hashes the index
// lookups computed (hashed here only when the view has no index).
void Extender::RememberPassed(Decision& d, std::size_t best) {
  auto& passed = d.ctx->passed;
  passed.clear();
  if (d.PodStatus().ok()) {
    passed.reserve(static_cast<std::size_t>(d.feasible));
    for (std::size_t k = 0; k < d.part_count; ++k) {
      const RequestPart& part = d.ctx->parts[k];
      for (std::size_t i = part.begin; i < part.end; ++i)
        if (d.new_memo->feasible[i])
          passed.push_back(d.index ? part.hashes[i - part.begin]
                                   : NodeIndex::Hash(d.ctx->names[i]));
    }
    if (best != d.n) passed.push_back(NodeIndex::Hash(d.ctx->names[best]));
  }
  RememberFilter(d.pod, &passed);
}

void Extender::EncodePrioritize(Decision& d) {
  std::vector<std::int64_t> priorities(d.n);
  const bool pod_ok = d.PodStatus().ok();
  for (std::size_t i = 0; i < d.n; ++i) {
    const NodeResult& res = d.Result(i);
    const bool ok = pod_ok && res.feasible();
    d.feasible += ok ? 1 : 0;
    priorities[i] = ok ? ToExtenderPriority(res.score) : 0;
  }
  LookAhead(d, priorities);
  std::vector<HostPriority> list;
  list.reserve(d.n);
  for (std::size_t i = 0; i < d.n; ++i) list.push_back({d.ctx->names[i], priorities[i]});
  EncodeHostPriorityList(list, &d.reply.body);
  reused_nothing_->Add(1);
}

void Extender::SetPendingPods(const PendingPods* pending,
                              std::function<bool(const std::string&)> being_bound) {
  pending_ = pending;
  being_bound_ = std::move(being_bound);
}

// docs/design.md#looking-ahead-in-serve. The next pod is scored over the same
// candidates (kube-scheduler's own filters passed them for this pod).
void Extender::LookAhead(Decision& d, std::span<std::int64_t> priorities) {
  if (!pending_ || !config_.look_ahead || !d.PodStatus().ok() || d.n < 2) return;
  std::vector<double> scores(d.n, kNoAheadScore);
  std::vector<char> feasible(d.n, 0);
  for (std::size_t i = 0; i < d.n; ++i) {
    const NodeResult& res = d.Result(i);
    if (!res.feasible()) continue;
    feasible[i] = 1;
    scores[i] = res.score;
  }
  // One feasible node leaves nothing to choose (LookAheadPick says so too, but
  // only after the queue was asked).
  if (std::count(feasible.begin(), feasible.end(), 1) < 2) return;
  // Not the next: a pod filtered already (kube-scheduler takes one pod at a time,
  // so it is being bound, or failed and waits) or one /bind holds.
  const std::optional<PodDemand> next =
      pending_->NextAfter(d.pod.uid, [this](const std::string& key) {
        {
          std::lock_guard<std::mutex> lock(recent_mu_);
          if (recent_keys_.count(key)) return true;
        }
        return being_bound_ && being_bound_(key);
      });
  if (!next) {
    metrics_->look_ahead.With({"no_next"}).Add(1);
    return;
  }
  const CycleState& cycle = d.ctx->parts[0].eval.cycle;
  const std::optional<std::size_t> pick =
      LookAheadPick(*runners_[d.stage()], *next, d.ctx->nodes, scores, [&](std::size_t i) {
        return AfterPlacing(*d.ctx->nodes[i], d.pod, d.Result(i).gpus, cycle.memory_need_per_gpu,
                            cycle.uses_nvlink, config_.nvlink.slots_per_gpu);
      });
  if (!pick) {
    metrics_->look_ahead.With({"kept"}).Add(1);
    return;
  }
  RaiseAlone(*pick, feasible, priorities);
  metrics_->look_ahead.With({"moved"}).Add(1);
}

void Extender::SupplyWorkload(const std::unordered_map<std::string, NodeState>& nodes) {
  if (!learns_workload_) return;
  std::vector<const NodeState*> all;
  all.reserve(nodes.size());
  for (const auto& [name, node] : nodes) all.push_back(&node);
  workload_.Supply(all);
}

void Extender::LearnWorkload(const PodDemand& pod) {
  if (!learns_workload_ || pod.gpu_count <= 0 || !pod.invalid_reason.empty()) return;
  std::string id = pod.uid.empty() ? pod.Key() : pod.uid;
  {
    std::lock_guard<std::mutex> lock(learned_mu_);
    if (!learned_pods_.insert(id).second) return;
    learned_order_.push_back(std::move(id));
    if (learned_order_.size() > kLearnedPods) {
      learned_pods_.erase(learned_order_.front());
      learned_order_.pop_front();
    }
  }
  workload_.Observe(pod);
}

void Extender::RememberFilter(const PodDemand& pod, std::vector<std::uint64_t>* passed) {
  std::vector<std::uint64_t> spare;
  {
    std::lock_guard<std::mutex> lock(recent_mu_);
    while (!recent_pods_.empty() && (recent_pods_.size() >= kRecentPods ||
                                     recent_passed_ + passed->size() > kRecentPassedNodes)) {
      recent_passed_ -= recent_pods_.front().passed.size();
      if (recent_pods_.front().passed.capacity() > spare.capacity())
        spare = std::move(recent_pods_.front().passed);
      if (const auto it = recent_keys_.find(recent_pods_.front().pod.Key());
          it != recent_keys_.end() && --it->second == 0)
        recent_keys_.erase(it);
      recent_pods_.pop_front();
    }
    recent_passed_ += passed->size();
    ++recent_keys_[pod.Key()];
    recent_pods_.push_back({pod, std::move(*passed)});
  }
  spare.clear();
  *passed = std::move(spare);
}

std::optional<Extender::RecentFilter> Extender::RecentPod(const std::string& uid,
                                                          const std::string& key,
                                                          std::string_view node) const {
  const std::uint64_t hash = NodeIndex::Hash(node);
  std::lock_guard<std::mutex> lock(recent_mu_);
  for (auto it = recent_pods_.rbegin(); it != recent_pods_.rend(); ++it) {
    if (!uid.empty() && !it->pod.uid.empty() ? it->pod.uid == uid : it->pod.Key() == key) {
      RecentFilter out;
      out.pod = it->pod;
      out.passed = std::find(it->passed.begin(), it->passed.end(), hash) != it->passed.end();
      out.passed_count = it->passed.size();
      return out;
    }
  }
  return std::nullopt;
}

Status Extender::Place(const PodDemand& pod, const std::string& node_name, Placement* out) {
  const auto view = store_.Load();
  const TimeMs now = clock_.NowMs();
  const int stage = ObserveStage(now, *view);
  const NodeState* known = view->Find(node_name);
  NodeState node = known ? *known : NodeState{};
  node.name = node_name;
  const bool fresh = known && known->metrics_known &&
                     now - known->sample_time_ms <= config_.metrics_stale_after_ms;
  if (!fresh) MakeUnknown(&node);
  const NodeState* nodes[] = {&node};
  Evaluation eval;
  runners_[stage]->Evaluate(pod, nodes, RunOptions{false, false}, &eval);
  if (!eval.pod_status.ok()) return eval.pod_status;
  const NodeResult& r = eval.nodes[0];
  if (!r.feasible()) return r.status;
  out->gpus = r.gpus;
  out->memory_per_gpu = eval.cycle.memory_need_per_gpu;
  out->uses_nvlink = eval.cycle.uses_nvlink;
  out->view_generation = view->generation;
  return Status::Fits();
}

std::size_t Extender::NodesNotRequested(const ClusterView& view) const {
  std::shared_ptr<const FilterMemo> candidates;
  {
    std::lock_guard<std::mutex> lock(memo_mu_);
    candidates = memo_;
  }
  if (!candidates || !view.snapshot) return 0;
  std::unordered_set<std::string_view> asked;
  for (std::size_t j = 0; j < candidates->names.size(); ++j) asked.insert(candidates->names[j]);
  std::size_t n = 0;
  for (const auto& [name, m] : view.snapshot->nodes) n += asked.count(name) ? 0 : 1;
  return n;
}

std::string Extender::DebugNodes() const {
  const auto view = store_.Load();
  const TimeMs now = clock_.NowMs();
  std::shared_ptr<const FilterMemo> candidates;
  {
    std::lock_guard<std::mutex> lock(memo_mu_);
    candidates = memo_;
  }
  nlohmann::json j;
  j["stage"] = Stage(now, *view);
  j["snapshotAgeSeconds"] = nullptr;
  if (view->health.last_success_ms)
    j["snapshotAgeSeconds"] = (now - view->health.last_success_ms) / 1000.0;
  j["lastError"] = view->health.last_error;
  std::unordered_set<std::string> asked;
  auto& without = j["nodesWithoutSeries"] = nlohmann::json::array();
  if (candidates) {
    for (std::size_t c = 0; c < candidates->names.size(); ++c) {
      const std::string name(candidates->names[c]);
      if (!view->nodes->count(name)) without.push_back(name);
      asked.insert(name);
    }
  }
  auto& orphans = j["seriesWithoutNode"] = nlohmann::json::array();
  auto& unusable = j["unusable"] = nlohmann::json::object();
  std::vector<std::string> sorted;
  // Which source fed each part of each node's reading, and what it lacks
  // (docs/metrics-sources.md).
  auto& sources = j["sources"] = nlohmann::json::object();
  auto& notes = j["notes"] = nlohmann::json::object();
  if (view->snapshot) {
    for (const auto& [name, m] : view->snapshot->nodes) {
      sorted.push_back(name);
      if (!m.problems.empty()) unusable[name] = m.problems;
      if (!m.notes.empty()) notes[name] = m.notes;
      sources[name] = {{"gpuMemory", m.sources.gpu_memory},
                       {"nvlink", m.sources.nvlink},
                       {"topology", m.sources.topology},
                       {"competition", m.sources.competition},
                       {"storage", m.sources.storage}};
    }
    j["problems"] = view->snapshot->problems;
  }
  std::sort(sorted.begin(), sorted.end());
  for (const auto& name : sorted)
    if (candidates && !asked.count(name)) orphans.push_back(name);
  auto& stale = j["stale"] = nlohmann::json::array();
  for (const auto& name : sorted) {
    const auto it = view->nodes->find(name);
    if (it != view->nodes->end() &&
        now - it->second.sample_time_ms > config_.metrics_stale_after_ms)
      stale.push_back(name);
  }
  return j.dump(2);
}

}  // namespace tidal::extender
