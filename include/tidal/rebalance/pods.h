#pragma once
// What the rebalancer needs to know about a pod beyond its GPU demand: whether
// it may be moved, what a restart costs, who recreates it, when it started;
// and the PodDisruptionBudgets that limit how many may go at once. Decoding
// never throws: malformed input gives a Status naming the field.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/kube/objects.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/metrics/snapshot.h"

namespace tidal::rebalance {

inline constexpr std::string_view kMigratableAnnotation = "tidal.io/migratable";
inline constexpr std::string_view kCheckpointIntervalAnnotation = "tidal.io/checkpoint-interval";
inline constexpr std::string_view kStartupAnnotation = "tidal.io/startup-seconds";
inline constexpr std::string_view kExpectedDurationAnnotation = "tidal.io/expected-duration";
inline constexpr std::string_view kExpectedEndAnnotation = "tidal.io/expected-end";
inline constexpr std::string_view kIoShareAnnotation = "tidal.io/io-share";

// Without tidal.io/io-share: the share of its time a pod is taken to wait on
// storage, by its AI_LOAD_TYPE. Low on purpose: an unknown share must not make
// a move look better than it is.
inline constexpr double kDefaultIoShareIoHeavy = 0.5;
inline constexpr double kDefaultIoShare = 0.1;

// From the pod's annotations.
struct MoveTraits {
  bool migratable = false;  // tidal.io/migratable: "true" (exactly; anything else: not movable)
  // tidal.io/checkpoint-interval (a duration: "15m", "900s", "900"): work since the
  // last checkpoint is lost on a move. Absent: the pod restarts from zero.
  std::optional<TimeMs> checkpoint_interval_ms;
  // tidal.io/startup-seconds (a duration): time from start to useful work again.
  TimeMs startup_ms = 0;
  GpuSet gpus;  // tidal.io/gpus ("0,2"), as the bind wrote it; empty: unknown
  // How long the pod is expected to run: tidal.io/expected-end (RFC 3339, a job
  // that knows its progress may keep it current) or tidal.io/expected-duration
  // (a duration from the pod's start, as a Job template can carry). Neither:
  // unknown, and the planner estimates (RemainingRun).
  std::optional<TimeMs> expected_end_ms;
  std::optional<TimeMs> expected_duration_ms;
  // tidal.io/io-share (0..1): the share of its run time spent waiting on storage
  // on a healthy disk. Absent: by load type (kDefaultIoShare*).
  std::optional<double> io_share;
};

// An unparseable value (a migratable pod with a malformed checkpoint interval,
// say) is an error naming the annotation and what was expected: such a pod is
// not moved, since its cost cannot be told.
Status ParseMoveTraits(const Labels& annotations, TimeMs default_startup_ms, MoveTraits* out);

// Work lost by restarting a pod that has run `age_ms`: since its last checkpoint
// (checkpoints every interval from its start), or all of it.
TimeMs WorkLostMs(TimeMs age_ms, const std::optional<TimeMs>& checkpoint_interval_ms);

// How long a pod that has run `age_ms` is expected to keep running at `now_ms`,
// never more than `horizon_ms` (beyond it the metrics that justify a move say
// nothing). From its expected end, else its expected duration, else the time it
// has already run (the Lindy estimate: a job that has run for t is as likely as
// not to run for t more, and it needs nothing the pod does not already show).
struct RemainingRun {
  enum class Basis { kExpectedEnd, kExpectedDuration, kAge } basis = Basis::kAge;
  TimeMs ms = 0;           // capped by the horizon, not negative
  TimeMs uncapped_ms = 0;  // before the cap
};
RemainingRun EstimateRemaining(const MoveTraits& traits, TimeMs age_ms, TimeMs now_ms,
                               TimeMs horizon_ms);

// A bound pod as the rebalancer sees it.
struct PodInfo {
  PodDemand demand;        // namespace, name, labels, annotations, GPUs, memory
  std::string node;        // spec.nodeName
  std::string phase;       // status.phase
  std::string owner;       // controller ownerReference "Kind/name"; empty: none
  TimeMs started_ms = -1;  // status.startTime; -1: unknown
  bool deleting = false;
  std::string Key() const { return demand.Key(); }
  bool Active() const { return kube::PodHoldsResources(node, phase); }
};

// A Pod object (JSON) from the API server.
Status DecodePodInfo(std::string_view json, PodInfo* out);

// NVLink-using pods per node by the extender's pod-watch rule: bound, with GPUs,
// neither finished nor being deleted, and PodUsesNvlink. The competition index
// comes from these where the agent's series do not give it (the DaemonSet's
// agent does not read the kubelet's pods by default).
NvlinkPodCounts CountNvlinkPods(const std::vector<PodInfo>& pods, const NvlinkDetection& detection);

// RFC 3339 as the API server writes it ("2026-01-01T00:00:00Z", fractional
// seconds and numeric offsets accepted), in Unix milliseconds.
std::optional<TimeMs> ParseRfc3339Ms(std::string_view text);

struct DisruptionBudget {
  std::string namespace_name, name;
  Labels match_labels;
  // A selector with matchExpressions is not evaluated here: the budget is taken to
  // cover every pod of its namespace (stricter, never looser; the Eviction API
  // enforces the exact one anyway).
  bool covers_namespace = false;
  int disruptions_allowed = 0;  // status.disruptionsAllowed
  bool Covers(const PodDemand& pod) const;
  std::string Key() const { return namespace_name + "/" + name; }
};

// A policy/v1 PodDisruptionBudget object (JSON).
Status DecodeDisruptionBudget(std::string_view json, DisruptionBudget* out);

}  // namespace tidal::rebalance
