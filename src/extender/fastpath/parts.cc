#include "extender/fastpath/parts.h"

#include <algorithm>

#include "tidal/policy/extender_score.h"

namespace tidal::extender {

RequestSplit SplitRequest(std::size_t n, std::size_t parallelism) {
  RequestSplit split;
  split.part_size = std::max(kMinNodesPerPart, (n + 4 * parallelism - 1) / (4 * parallelism));
  split.part_count = n == 0 ? 1 : (n + split.part_size - 1) / split.part_size;
  return split;
}

std::size_t AppendRejectionText(const Status& status, std::string* out) {
  out->append("tidal: ");
  const std::size_t text_at = out->size();
  status.AppendReason(out);
  SpellOutPercentSigns(out, text_at);
  return text_at;
}

std::string_view ReasonLabel(std::string_view reason) {
  // A plain loop over the few bytes a tag may take: memchr costs more to call.
  const std::size_t limit = std::min<std::size_t>(reason.size(), 25);
  for (std::size_t i = 0; i < limit; ++i)
    if (reason[i] == ':') return reason.substr(0, i);
  return "other";
}

void CountRejections(std::string_view label, int count,
                     std::vector<std::pair<std::string, int>>* by_label) {
  auto it = std::find_if(by_label->begin(), by_label->end(),
                         [&](const auto& p) { return p.first == label; });
  if (it == by_label->end()) {
    by_label->emplace_back(std::string(label), count);
  } else {
    it->second += count;
  }
}

void MakeUnknown(NodeState* n) {
  n->metrics_known = false;
  n->gpus.clear();
  n->storage_await_ms = 0;
  n->nvlink_competition = 0;
  n->Finalize();
}

namespace {

// nodes[begin, end): the view's node for each candidate (looked up by name), or
// a copy overlaid with the request's Node object, or an unknown node.
void ResolvePart(const PartInputs& in, RequestPart* part) {
  // Copies, not references into `in`: a call in the loop could change what a
  // reference reads, so the compiler would load each again for every node.
  const ClusterView& view = in.view;
  const NodeIndex* index = in.index;
  const std::span<const std::string_view> names = in.names;
  const TimeMs now = in.now, stale_after_ms = in.stale_after_ms;
  const bool has_nodes = in.args.has_nodes;
  const WireNode* wire_nodes = in.args.nodes.data();
  const NodeState** nodes = in.nodes.data();
  const std::size_t begin = part->begin, end = part->end;
  auto& owned = part->owned;
  owned.clear();
  owned.reserve(end - begin);
  part->unknown = 0;
  // The index's slots are read a few names ahead of their use: at 5 000 nodes
  // every lookup is otherwise a cache miss waited for, one after the other.
  constexpr std::size_t kAhead = 8;
  auto& hashes = part->hashes;
  if (index) {
    hashes.resize(end - begin);
    for (std::size_t i = begin; i < end; ++i) hashes[i - begin] = NodeIndex::Hash(names[i]);
    for (std::size_t i = begin; i < std::min(begin + kAhead, end); ++i)
      index->Prefetch(hashes[i - begin]);
  }
  for (std::size_t i = begin; i < end; ++i) {
    const NodeState* known;
    bool fresh;
    if (index) {
      if (i + kAhead < end) index->Prefetch(hashes[i + kAhead - begin]);
      const NodeIndex::Entry* e = LookupIndexed(view, names[i], hashes[i - begin]);
      known = e ? e->node : nullptr;
      // The policy reads the node's first line next: asked for now, it is in
      // cache by then.
      if (known) __builtin_prefetch(known);
      fresh = e && e->sample_ms != NodeIndex::kNoMetrics && now - e->sample_ms <= stale_after_ms;
    } else {
      known = view.Find(names[i]);
      fresh = known && known->metrics_known && now - known->sample_time_ms <= stale_after_ms;
    }
    const bool found = known != nullptr;
    part->unknown += fresh ? 0 : 1;
    if (has_nodes) {
      const WireNode& w = wire_nodes[i];
      owned.push_back(found ? *known : NodeState{});
      NodeState& o = owned.back();
      o.name = w.name;
      o.labels = w.labels;
      if (w.allocatable_gpus >= 0) o.allocatable_gpus = w.allocatable_gpus;
      o.cpu_milli_allocatable = w.cpu_milli_allocatable;
      o.memory_allocatable = w.memory_allocatable;
      if (!fresh) MakeUnknown(&o);
      nodes[i] = &o;
    } else if (fresh) {
      nodes[i] = known;
    } else {
      owned.push_back(found ? *known : NodeState{});
      owned.back().name = std::string(names[i]);
      MakeUnknown(&owned.back());
      nodes[i] = &owned.back();
    }
  }
}

// A filter's verdicts of the part: into the memo, and the rejections' reasons
// formatted once (straight into the reply's runs in NodeNames mode).
void WritePartVerdicts(const ExtenderArgs& args, std::span<const std::string_view> names,
                       FilterMemo* memo, RequestPart* part) {
  const std::size_t begin = part->begin, end = part->end;
  const Evaluation& eval = part->eval;
  const bool encode = !args.has_nodes && eval.pod_status.ok();
  for (std::size_t i = begin; i < end; ++i) {
    const NodeResult& res = eval.nodes[i - begin];
    memo->feasible[i] = res.feasible() ? 1 : 0;
    memo->priorities[i] = ToExtenderPriority(res.score);
    if (!eval.pod_status.ok()) continue;
    if (res.feasible()) {
      ++part->feasible;
      if (encode) AppendJsonListItem(names[i], &part->names_json);
      continue;
    }
    const bool unresolvable = res.status.code() == Code::kUnresolvable;
    if (encode) {
      // The reason is formatted once, straight into the reply's member.
      std::string* run = unresolvable ? &part->unresolvable_json : &part->failed_json;
      const std::size_t value_at = OpenJsonMember(names[i], run);
      const std::size_t text_at = AppendRejectionText(res.status, run);
      CountRejections(ReasonLabel(std::string_view(*run).substr(text_at)), 1, &part->rejected_by);
      CloseJsonMember(value_at, run);
      part->rejections.push_back({static_cast<std::uint32_t>(i), 0, unresolvable});
      continue;
    }
    // The reasons are formatted here, once, into one buffer.
    const std::size_t text_at = AppendRejectionText(res.status, &part->reasons);
    part->rejections.push_back({static_cast<std::uint32_t>(i),
                                static_cast<std::uint32_t>(part->reasons.size()), unresolvable});
    CountRejections(ReasonLabel(std::string_view(part->reasons).substr(text_at)), 1,
                    &part->rejected_by);
  }
  part->reasons_encoded = encode;
}

}  // namespace

void EvaluatePart(const PartInputs& in, RequestPart* part) {
  ResolvePart(in, part);
  const std::size_t begin = part->begin, end = part->end;
  const std::span<const NodeState* const> mine(in.nodes.data() + begin, end - begin);
  in.runner.Evaluate(in.pod, mine, RunOptions{false, false}, &part->eval, &part->scratch);
  part->reasons.clear();
  part->rejections.clear();
  part->names_json.clear();
  part->failed_json.clear();
  part->unresolvable_json.clear();
  part->feasible = 0;
  part->rejected_by.clear();
  if (in.filter) WritePartVerdicts(in.args, in.names, in.memo, part);
}

}  // namespace tidal::extender
