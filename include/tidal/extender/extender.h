#pragma once
// The extender's verbs without HTTP: a request body in, a response body out.
// Each request reads the current view (one atomic load), decides with the
// policy runner of the current fallback stage, and never blocks on I/O.
#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/fork_join.h"
#include "tidal/extender/pending.h"
#include "tidal/extender/view.h"
#include "tidal/extender/wire.h"
#include "tidal/metrics/instruments.h"
#include "tidal/policy/runner.h"

namespace tidal::extender {

// The fast path's own types (src/extender/fastpath/).
struct FilterMemo;

// The extender's own series (docs/extender.md lists them).
struct ExtenderMetrics {
  Family<AtomicDouble> requests{
      "tidal_extender_requests_total", "Extender requests by verb and outcome.", {"verb", "code"}};
  Family<Histogram> duration{"tidal_extender_request_duration_seconds",
                             "Server-side time per extender request, decoding to encoding.",
                             {"verb"}};
  Family<AtomicDouble> rejections{"tidal_extender_rejections_total",
                                  "Nodes rejected by filter, by the plugin that rejected them.",
                                  {"reason"}};
  Family<AtomicDouble> stage_transitions{"tidal_extender_fallback_transitions_total",
                                         "Fallback stage changes, by the stage entered.",
                                         {"stage"}};
  Family<AtomicDouble> binds{
      "tidal_extender_binds_total",
      "Bind requests by outcome (bound, error, unfit, unknown_pod, not_offered).",
      {"outcome"}};
  Family<Histogram> bind_duration{
      "tidal_extender_bind_duration_seconds",
      "Time per /bind request by outcome, the API server's answer included.",
      {"outcome"}};
  Family<AtomicDouble> bind_retries{
      "tidal_extender_bind_retries_total",
      "API calls of /bind retried, by what caused the retry (409, 429, 5xx, transport).",
      {"cause"}};
  Family<AtomicDouble> http_errors{
      "tidal_extender_http_errors_total",
      "Requests answered 500 because handling them threw, by path and by what was thrown "
      "(bad_alloc, exception, unknown).",
      {"path", "reason"}};
  Family<AtomicDouble> look_ahead{
      "tidal_extender_look_ahead_total",
      "Filters and prioritizes by what the look-ahead did: moved (the pod's top priority went "
      "to another of its best nodes, leaving the next pod in the queue more), kept (its best "
      "node was also best for both), no_next (no next pod of its scheduler is known).",
      {"outcome"}};
  Family<AtomicDouble> prioritize_reuse{
      "tidal_extender_prioritize_reuse_total",
      "Prioritize requests by what they reused of the filter for the same pod: its answer, "
      "sent back as it was (answer), its verdicts found name by name (verdicts), or nothing "
      "(none: every node evaluated again).",
      {"reuse"}};
  AtomicDouble unknown_nodes;  // in the last filter request
  AtomicDouble fallback_stage;
  AtomicDouble golden_pool_empty;  // 1: stage 2 is due but no node is in the golden pool
  AtomicDouble reservations_in_flight;
};

std::vector<double> LatencyBuckets();
// For /bind, which waits on the API server: up to kube-scheduler's httpTimeout and past it.
std::vector<double> BindLatencyBuckets();

// Instant queries in one fetch of PrometheusSource (the agent series and their sample
// times); each is bounded by queryTimeout, so a fetch by this many times it.
inline constexpr TimeMs kQueriesPerFetch = 2;

struct Reply {
  int http_status = 200;
  std::string body;
};

class Extender {
 public:
  // memoryLearning: undeclared pods get learned estimates in every stage's runner
  // (call before serving; the learner outlives the extender).
  void SetLearnedMemory(const MemoryLearner* learned) {
    for (auto& r : runners_) r->SetLearnedMemory(learned);
  }
  // Throws InputError on bad plugin args (start-up).
  // `parallelism`: threads that work on one request (the caller and
  // parallelism - 1 helpers), for large requests (src/extender/fastpath/parts.h).
  Extender(PolicyConfig config, const ViewStore& store, const Clock& clock,
           std::shared_ptr<spdlog::logger> log, ExtenderMetrics* metrics, int parallelism = 1);
  ~Extender();

  Reply Filter(std::string_view body);
  Reply Prioritize(std::string_view body);

  // The look-ahead's inputs (config lookAhead): the unbound pods in
  // kube-scheduler's queue order, and whether a pod (namespace/name) is being
  // bound (then not the next one). Set before serving; without it no look-ahead.
  void SetPendingPods(const PendingPods* pending,
                      std::function<bool(const std::string&)> being_bound);

  // docs/design.md#fallback: 0 normal; 1 the source has failed (or its snapshot is overdue);
  // 2 it has been failing for longer than fallback.stage2After, and some node of
  // the view is in the golden pool (with none, stage 1 goes on: a stage 2 would
  // reject every node; the golden_pool_empty gauge raises the alert).
  int Stage(TimeMs now_ms, const ClusterView& view) const;
  // Updates the stage gauge and logs a transition once; returns the stage.
  int ObserveStage(TimeMs now_ms, const ClusterView& view);
  // Nodes seen in the last request with no usable series, and series for nodes
  // not in it, as JSON.
  std::string DebugNodes() const;
  // Nodes with series in the view's snapshot that the last filter request did not
  // name (0 before any): series of nodes the scheduler does not know.
  std::size_t NodesNotRequested(const ClusterView& view) const;

  // For /bind. The pod as its last filter request described it (by UID, else
  // namespace/name; kube-scheduler binds a pod it has just filtered), and
  // whether `node` passed that filter: the one place a bind may go.
  struct RecentFilter {
    PodDemand pod;
    bool passed = false;           // `node` passed
    std::size_t passed_count = 0;  // nodes that passed
  };
  std::optional<RecentFilter> RecentPod(const std::string& uid, const std::string& key,
                                        std::string_view node) const;
  // Bounds of what is kept for /bind: the last filters of this many pods, and at
  // most this many passing nodes over all of them (8 bytes each: 8 MiB). Past
  // either the oldest are dropped; one filter's nodes are kept whole even beyond
  // the second (its request held them all at once).
  static constexpr std::size_t kRecentPods = 1024;
  // Candidates one request may name: kube-scheduler sends at most the cluster's
  // nodes (5 000 is Kubernetes' tested limit). A request beyond is an error reply,
  // so that no request costs more than about 70 MB (docs/hardening.md).
  static constexpr std::size_t kMaxCandidates = 50'000;
  // Scratch of a request over this many candidates is freed, not pooled.
  static constexpr std::size_t kMaxPooledCandidates = 16'384;
  static constexpr std::size_t kRecentPassedNodes = std::size_t{1} << 20;
  // The placement the current stage's policy makes for `pod` on one node of the
  // current view, reservations included: the GPUs, and the memory and NVLink use
  // to reserve. Unfit when the node no longer takes the pod.
  struct Placement {
    GpuSet gpus;
    Bytes memory_per_gpu = 0;
    bool uses_nvlink = false;
    std::uint64_t view_generation = 0;
  };
  Status Place(const PodDemand& pod, const std::string& node, Placement* out);
  const PolicyConfig& config() const { return config_; }
  // The GPU workload learned from the pods filtered so far (fgd's `tasks: learned`;
  // nothing is learned when no plugin reads it).
  const WorkloadLearner& learned_workload() const { return workload_; }
  // The nodes as the refresher built them (Refresher::OnNodesBuilt): the learned
  // workload is weighed by scarcity over them (WorkloadLearner::Supply), when a
  // plugin reads it.
  void SupplyWorkload(const std::unordered_map<std::string, NodeState>& nodes);
  // A pod was given the GPUs Tidal chose (KubeSync::OnGpuChoiceCarriedOut).
  void NoteGpuChoiceCarriedOut() { workload_.NoteGpuChoiceCarriedOut(); }
  // Pods remembered as learned, by UID (namespace/name without one): a pod
  // filtered again (kube-scheduler retries pending pods) counts once while it is
  // among the last this many.
  static constexpr std::size_t kLearnedPods = 4096;

 private:
  struct Context;  // per-request working storage, pooled
  std::unique_ptr<Context> Acquire();
  void Release(std::unique_ptr<Context> c);
  // A verb's instruments, looked up once: With() takes a lock and builds label
  // vectors, which the request path should not pay for.
  struct VerbInstruments {
    AtomicDouble* ok = nullptr;
    AtomicDouble* bad_request = nullptr;
    Histogram* duration = nullptr;
  };
  VerbInstruments InstrumentsFor(const std::string& verb);
  // Filter and prioritize: reuse an answer, decode, reuse verdicts, evaluate,
  // encode; each step a function below, sharing one Decision.
  Reply Decide(std::string_view verb, std::string_view body, bool filter);
  struct Decision;
  std::shared_ptr<const FilterMemo> CurrentMemo(const ClusterView& view, int stage) const;
  bool ReuseAnswer(Decision& d, std::string_view body);
  Status DecodeRequest(Decision& d, std::string_view body);
  bool ReuseVerdicts(Decision& d);
  void EvaluateParts(Decision& d);
  void EncodeFilter(Decision& d);
  void FillFilterResult(Decision& d, bool least_loaded, FilterResult* r,
                        std::vector<std::pair<std::string, int>>* rejected_by);
  std::size_t LeastLoadedRejected(const Decision& d) const;
  void RememberPassed(Decision& d, std::size_t best);
  void EncodePrioritize(Decision& d);
  // Raises in `priorities` (per candidate) the node the look-ahead chooses.
  void LookAhead(Decision& d, std::span<std::int64_t> priorities);
  const PendingPods* pending_ = nullptr;
  std::function<bool(const std::string&)> being_bound_;
  Reply BadRequest(Decision& d, const Status& s);
  Reply Finish(Decision& d, bool ok);
  void LogDecision(const Decision& d, std::string_view pod_key, std::size_t nodes, int feasible,
                   std::string_view how) const;

  PolicyConfig config_;
  const ViewStore& store_;
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> log_;
  ExtenderMetrics* metrics_;
  std::vector<std::unique_ptr<Runner>> runners_;  // by stage 0, 1, 2
  VerbInstruments filter_instruments_, prioritize_instruments_;
  AtomicDouble *reused_answer_, *reused_verdicts_, *reused_nothing_;
  std::atomic<int> last_stage_{-1};
  std::atomic<bool> last_golden_empty_{false};
  TimeMs start_ms_ = 0;
  // The stage by the source's health alone.
  int StageBySource(TimeMs now_ms, const ClusterView& view) const;
  struct StageVerdict {
    int stage = 0;
    bool golden_empty = false;  // stage 2 is due, but no golden node is known
  };
  StageVerdict StageNow(TimeMs now_ms, const ClusterView& view) const;
  // Sets the gauges and logs a change once.
  void NoteStage(StageVerdict v, const ClusterView& view);
  // Whether a node of the view is in the golden pool; computed once per nodes map.
  bool GoldenPoolHasNodes(const ClusterView& view) const;
  bool InGoldenPool(const Labels& labels) const;
  mutable std::mutex golden_mu_;
  mutable std::weak_ptr<const NodeMap> golden_checked_;
  mutable bool golden_has_nodes_ = false;
  // Without the API watch the view has no labels: a golden node seen in a
  // request's Node objects counts.
  std::atomic<bool> golden_in_payloads_{false};

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Context>> pool_;
  std::size_t parallelism_ = 1;
  std::unique_ptr<ForkJoin> workers_;
  std::atomic<int> in_flight_{0};  // requests being decided

  // The last filter's verdicts, reused by the prioritize call that follows for the
  // same pod and view (kube-scheduler sends the survivors in the same order); its
  // candidates are what /debug/nodes reports on.
  mutable std::mutex memo_mu_;
  std::shared_ptr<const FilterMemo> memo_;
  // A filter's pod and the NodeIndex::Hash of each node that passed, in request
  // order: a bind scans them once; sorting them would cost the filter's path more.
  struct Remembered {
    PodDemand pod;
    std::vector<std::uint64_t> passed;
  };
  // Keeps `pod` with `passed` (moved from; it gets back the storage of an entry
  // dropped, so that a warm request context does not allocate for it).
  void RememberFilter(const PodDemand& pod, std::vector<std::uint64_t>* passed);
  mutable std::mutex recent_mu_;
  std::deque<Remembered> recent_pods_;  // newest last, bounded (kRecentPods, kRecentPassedNodes)
  std::unordered_map<std::string, int> recent_keys_;  // namespace/name → entries in recent_pods_

  // Learns a filtered GPU pod's task type into workload_ unless it was learned already.
  void LearnWorkload(const PodDemand& pod);
  WorkloadLearner workload_;
  bool learns_workload_ = false;  // a plugin reads it (UseOfWorkloadLearner)
  std::mutex learned_mu_;
  std::unordered_set<std::string> learned_pods_;
  std::deque<std::string> learned_order_;  // oldest first, at most kLearnedPods
  std::size_t recent_passed_ = 0;          // passing nodes over recent_pods_
};

}  // namespace tidal::extender
