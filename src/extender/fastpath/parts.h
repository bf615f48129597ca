#pragma once
// A request's candidates in parts: how a request is split over the helper
// threads, and what one thread does for its part (resolve the names through the
// node index, evaluate, format a filter's verdicts straight into the reply's
// runs). Its oracles: the same request decided by one thread, and the reference
// path (fastpath/README.md).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extender/fastpath/filter_memo.h"
#include "extender/fastpath/node_index.h"
#include "tidal/extender/view.h"
#include "tidal/extender/wire.h"
#include "tidal/policy/runner.h"

namespace tidal::extender {

// Parts are no smaller: below that a thread's hand-off costs more than it saves.
inline constexpr std::size_t kMinNodesPerPart = 512;
// The helpers work on requests of at least this many nodes. Waking a sleeping
// helper is a futex wake and, on a VM, an IPI to a halted vCPU: for a smaller
// request (~70 µs alone at 1 000 nodes) it saves nothing, and while the core
// it lands on is busy (the refresher every few seconds) the woken helper and
// the request's own thread queue on the other one. At 1 000 nodes that took the
// p99 of a one-connection load from 0.3 to 0.9–1.6 ms.
inline constexpr std::size_t kMinNodesForHelpers = 2048;
// A filter body from this size on (about 2 000 names) wakes the helpers before
// it is decoded.
inline constexpr std::size_t kPrepareBytes = 32 << 10;

struct RequestSplit {
  std::size_t part_size = 0, part_count = 0;
};
// About four parts per thread, none under kMinNodesPerPart; one part when n is 0.
RequestSplit SplitRequest(std::size_t n, std::size_t parallelism);
// Whether a request of n candidates goes to the helpers: only a large one decided
// alone (`in_flight` requests, this one included). When requests overlap (a burst,
// several schedulers) the cores are already busy, and a part waiting for a helper
// that another request's thread has displaced is only later.
inline bool UseHelpers(std::size_t n, int in_flight) {
  return n >= kMinNodesForHelpers && in_flight == 1;
}

// One part of a request's candidates, [begin, end): resolved, evaluated and, for
// a filter, their rejections written by one thread.
struct RequestPart {
  std::size_t begin = 0, end = 0;
  std::vector<NodeState> owned;       // overlays (Nodes mode) and unknown nodes
  std::vector<std::uint64_t> hashes;  // of the names, for NodeIndex
  Evaluation eval;
  EvaluationScratch scratch;
  int unknown = 0;
  // Texts of FailedNodes, back to back: a warm context formats the reasons
  // without allocating. With where each rejected node's text ends.
  std::string reasons;
  struct Rejection {
    std::uint32_t node, end;
    bool unresolvable;
  };
  std::vector<Rejection> rejections;
  // NodeNames mode: the part's survivors and FailedNodes / FailedAndUnresolvableNodes
  // members, encoded (FilterResult's runs).
  std::string names_json, failed_json, unresolvable_json;
  // The rejections went straight into failed_json / unresolvable_json: `reasons`
  // is empty and the rejections' `end` unset.
  bool reasons_encoded = false;
  int feasible = 0;
  std::vector<std::pair<std::string, int>> rejected_by;  // rejections by plugin tag
};

// What every part of one request reads; `nodes` is written at the part's slots.
struct PartInputs {
  const ClusterView& view;
  const NodeIndex* index;  // null unless every map of the view is indexed
  TimeMs now;
  TimeMs stale_after_ms;  // metrics older than this are unknown
  const ExtenderArgs& args;
  std::span<const std::string_view> names;
  const PodDemand& pod;
  const Runner& runner;
  bool filter;
  FilterMemo* memo;  // a filter's, written at the part's slots
  std::vector<const NodeState*>& nodes;
};
// Resolves, evaluates and (filter) writes the verdicts of part->[begin, end).
void EvaluatePart(const PartInputs& in, RequestPart* part);

// Shared with the reply's encoder.
// A rejection's FailedNodes text, appended to `out`: ours are prefixed, since
// kube-scheduler shows them with others'. Returns where the plugin's own text starts.
std::size_t AppendRejectionText(const Status& status, std::string* out);
// The plugin tag of a reason ("loadaware: GPU memory …" → "loadaware"): the
// rejection counter's label, low-cardinality by construction.
std::string_view ReasonLabel(std::string_view reason);
// Adds `count` rejections by plugin tag `label` (a handful of tags: a list).
void CountRejections(std::string_view label, int count,
                     std::vector<std::pair<std::string, int>>* by_label);
// A node without usable series: what the policy sees of it.
void MakeUnknown(NodeState* n);

}  // namespace tidal::extender
