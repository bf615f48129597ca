#pragma once
// The node index of the request path. Its oracle is ClusterView::FindInMaps,
// the plain lookup through the view's maps (fastpath/README.md).
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/extender/view.h"

namespace tidal::extender {

// Nodes by name for the request path: open addressing over one of a view's
// maps, built once when the view publishes a new one (the reserved nodes have
// an index of their own, looked up first, so a bind does not re-index the rest). A request at 5 000
// candidates hashes each name once and reads one slot, where the maps cost a
// std::string per key, a modulo and a walk through scattered list nodes. A slot
// also holds the name's bytes (in one buffer) and what the request checks
// before deciding (are the node's metrics fresh?): at 5 000 nodes each of those,
// read through the node, is a cache miss.
class NodeIndex {
 public:
  static constexpr TimeMs kNoMetrics = std::numeric_limits<TimeMs>::min();
  struct Entry {
    std::uint64_t hash = 0;
    const NodeState* node = nullptr;           // null: an empty slot
    TimeMs sample_ms = 0;                      // node->sample_time_ms; kNoMetrics: !metrics_known
    std::uint32_t name_at = 0, name_size = 0;  // in names_
  };
  explicit NodeIndex(std::shared_ptr<const NodeMap> nodes);
  explicit NodeIndex(std::shared_ptr<const ReservedMap> reserved);
  const NodeState* Find(std::string_view name) const {
    const Entry* e = Lookup(name, Hash(name));
    return e ? e->node : nullptr;
  }
  // For many names: hash them all, Prefetch a few ahead, then Lookup.
  static std::uint64_t Hash(std::string_view name);
  void Prefetch(std::uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  const Entry* Lookup(std::string_view name, std::uint64_t hash) const;
  // Whether it was built from this map (a copied view may have been given another).
  bool Indexes(const void* map) const { return map == map_.get(); }

 private:
  void Reserve(std::size_t n);
  void Insert(const std::string& name, const NodeState& node);
  std::shared_ptr<const void> map_;  // keeps the pointees alive
  std::vector<Entry> slots_;
  std::string names_;
  std::uint64_t mask_ = 0;
};

// The entry of `name` (hashed with NodeIndex::Hash) in an Indexed() view, recent
// and reserved first; null when unknown.
inline const NodeIndex::Entry* LookupIndexed(const ClusterView& view, std::string_view name,
                                             std::uint64_t hash) {
  if (!view.recent->empty())
    if (const NodeIndex::Entry* e = view.recent_index->Lookup(name, hash)) return e;
  if (!view.reserved->empty())
    if (const NodeIndex::Entry* e = view.reserved_index->Lookup(name, hash)) return e;
  return view.index->Lookup(name, hash);
}

}  // namespace tidal::extender
