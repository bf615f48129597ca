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

namespace tidal::rebalance {

inline constexpr std::string_view kMigratableAnnotation = "tidal.io/migratable";
inline constexpr std::string_view kCheckpointIntervalAnnotation = "tidal.io/checkpoint-interval";
inline constexpr std::string_view kStartupAnnotation = "tidal.io/startup-seconds";
inline constexpr std::string_view kGpusAnnotation = "tidal.io/gpus";

// From the pod's annotations.
struct MoveTraits {
  bool migratable = false;  // tidal.io/migratable: "true" (exactly; anything else: not movable)
  // tidal.io/checkpoint-interval (a duration: "15m", "900s", "900"): work since the
  // last checkpoint is lost on a move. Absent: the pod restarts from zero.
  std::optional<TimeMs> checkpoint_interval_ms;
  // tidal.io/startup-seconds (a duration): time from start to useful work again.
  TimeMs startup_ms = 0;
  GpuSet gpus;  // tidal.io/gpus ("0,2"), as the bind wrote it; empty: unknown
};

// An unparseable value (a migratable pod with a malformed checkpoint interval,
// say) is an error naming the annotation and what was expected: such a pod is
// not moved, since its cost cannot be told.
Status ParseMoveTraits(const Labels& annotations, TimeMs default_startup_ms, MoveTraits* out);

// Work lost by restarting a pod that has run `age_ms`: since its last checkpoint
// (checkpoints every interval from its start), or all of it.
TimeMs WorkLostMs(TimeMs age_ms, const std::optional<TimeMs>& checkpoint_interval_ms);

// A bound pod as the rebalancer sees it.
struct PodInfo {
  PodDemand demand;        // namespace, name, labels, annotations, GPUs, memory
  std::string node;        // spec.nodeName
  std::string phase;       // status.phase
  std::string owner;       // controller ownerReference "Kind/name"; empty: none
  TimeMs started_ms = -1;  // status.startTime; -1: unknown
  bool deleting = false;
  std::string Key() const { return demand.Key(); }
};

// A Pod object (JSON) from the API server.
Status DecodePodInfo(std::string_view json, PodInfo* out);

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
