#pragma once
// What a request reads: an immutable view of the cluster (nodes with their
// latest metrics) and of the metrics source's health, swapped in atomically by
// the refresher. A request takes one shared_ptr and no lock per node.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/types.h"
#include "tidal/metrics/snapshot.h"

namespace tidal::extender {

struct SourceHealth {
  std::uint64_t attempts = 0;
  std::uint64_t failures = 0;
  TimeMs last_attempt_ms = 0;
  TimeMs last_success_ms = 0;   // 0: never
  TimeMs failing_since_ms = 0;  // first failure since the last success; 0: not failing
  std::string last_error;
  TimeMs last_fetch_duration_ms = 0;  // of the last attempt, failed or not
  bool slow = false;                  // the last successful fetch took over the slow threshold
  std::size_t unusable_nodes = 0;     // nodes with series whose reading is not used
};

// Labels and allocatable resources of a node as the API server has them.
struct NodeInfo {
  Labels labels;
  int allocatable_gpus = -1;
  int gpus_requested = 0;
  std::int64_t cpu_milli_allocatable = 0;
  Bytes memory_allocatable = 0;
  // Active pods holding each GPU index (their tidal.io/gpus annotation): with the
  // node's device slots per GPU, the slots still free.
  std::array<std::uint16_t, kMaxGpusPerNode> pods_on_gpu{};
  friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

// Device slots per GPU: the node advertises allocatable GPUs as GPUs × replicas
// (time-slicing); -1 when unknown. A cordoned node (0 allocatable) has none.
int DeviceSlotsPerGpu(int allocatable_gpus, std::size_t gpus);

using NodeMap = std::unordered_map<std::string, NodeState>;
// The nodes holding reservations, each with them applied. Shared, not copied:
// a view's overlay tiers share their nodes with the previous view's.
using ReservedMap = std::unordered_map<std::string, std::shared_ptr<const NodeState>>;

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

struct ClusterView {
  std::uint64_t generation = 0;
  std::shared_ptr<const MetricsSnapshot> snapshot;  // null until the first success
  // Every node with series (metrics_known unless its reading is unusable), with the
  // NodeInfo known when the view was built; Finalize()d.
  std::shared_ptr<const std::unordered_map<std::string, NodeState>> nodes =
      std::make_shared<const std::unordered_map<std::string, NodeState>>();
  std::uint64_t catalog_generation = 0;  // of the NodeCatalog the nodes were built with
  // The nodes holding reservations of pods placed since their sample (docs/design.md#reservations),
  // with those applied, made against `nodes`, in two tiers: `recent` (the nodes
  // changed since `reserved` was made, small) is looked up first, then
  // `reserved`, then `nodes`. A `recent` entry that points into `nodes` says the
  // node's reservations are gone.
  std::shared_ptr<const ReservedMap> reserved = std::make_shared<const ReservedMap>();
  std::shared_ptr<const ReservedMap> recent = std::make_shared<const ReservedMap>();
  std::uint64_t reservations_generation = 0;  // of the InFlight the overlay was made at
  SourceHealth health;
  // Set by ViewStore::Publish; each used only while it indexes its map.
  std::shared_ptr<const NodeIndex> index, reserved_index, recent_index;

  // Whether every map is indexed (a published view always is).
  bool Indexed() const {
    return index && index->Indexes(nodes.get()) && reserved_index &&
           reserved_index->Indexes(reserved.get()) && recent_index &&
           recent_index->Indexes(recent.get());
  }
  // The entry of `name` (hashed with NodeIndex::Hash), recent and reserved
  // first, null when unknown. Only while Indexed().
  const NodeIndex::Entry* Lookup(std::string_view name, std::uint64_t hash) const {
    if (!recent->empty())
      if (const NodeIndex::Entry* e = recent_index->Lookup(name, hash)) return e;
    if (!reserved->empty())
      if (const NodeIndex::Entry* e = reserved_index->Lookup(name, hash)) return e;
    return index->Lookup(name, hash);
  }
  const NodeState* Find(std::string_view name) const {
    if (Indexed()) {
      const NodeIndex::Entry* e = Lookup(name, NodeIndex::Hash(name));
      return e ? e->node : nullptr;
    }
    return FindInMaps(std::string(name));
  }
  const NodeState* FindInMaps(const std::string& name) const {
    for (const ReservedMap* tier : {recent.get(), reserved.get()}) {
      if (tier->empty()) continue;
      if (const auto it = tier->find(name); it != tier->end()) return it->second.get();
    }
    const auto it = nodes->find(name);
    return it == nodes->end() ? nullptr : &it->second;
  }
};

// Builds the nodes of a view from a snapshot (null: none yet) and the known node
// infos. Nodes the API server knows but with no series are there as unknown
// (metrics_known false) with their labels and allocatable GPUs.
void BuildNodes(const MetricsSnapshot* snapshot,
                const std::unordered_map<std::string, NodeInfo>& infos,
                std::unordered_map<std::string, NodeState>* out);

// The current view: a request takes a reference to it (one short lock, never
// held across anything but the pointer copy) and keeps deciding on it while a
// newer one is published. Not std::atomic<std::shared_ptr>: libstdc++ 12 locks it
// with a pointer bit that ThreadSanitizer cannot see, so every concurrent
// load and store is reported as a race and the tsan runs would prove nothing.
class ViewStore {
 public:
  ViewStore() : view_(std::make_shared<const ClusterView>()) {}
  std::shared_ptr<const ClusterView> Load() const {
    std::lock_guard<std::mutex> lock(mu_);
    return view_;
  }
  // Indexes what the view changed first (outside the lock): each map only when
  // it is new (a bind changes the small recent tier alone).
  void Publish(std::shared_ptr<const ClusterView> v) {
    if (!v->Indexed()) {
      auto indexed = std::make_shared<ClusterView>(*v);
      const auto stale = [](const auto& index, const auto& map) {
        return !index || !index->Indexes(map.get());
      };
      if (stale(v->index, v->nodes)) indexed->index = std::make_shared<const NodeIndex>(v->nodes);
      if (stale(v->reserved_index, v->reserved))
        indexed->reserved_index = std::make_shared<const NodeIndex>(v->reserved);
      if (stale(v->recent_index, v->recent))
        indexed->recent_index = std::make_shared<const NodeIndex>(v->recent);
      v = std::move(indexed);
    }
    std::lock_guard<std::mutex> publish(publish_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      view_.swap(v);
    }
    // The view just replaced may still be in a request's hands, and whoever drops
    // the last reference frees it (a 1 000-node view takes milliseconds): keep it
    // until the next publish, so that it is freed here, by the publisher, not by a
    // request that happened to be reading it.
    retired_.swap(v);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const ClusterView> view_;
  std::mutex publish_mu_;  // publishers only: orders the retired slot's swaps
  std::shared_ptr<const ClusterView> retired_;
};

// Node infos learned from `Nodes` payloads (and, with the API watch, from the
// API server), read by the refresher when it builds a view.
class NodeCatalog {
 public:
  // `then` (if given) is called with the generation that holds `info`, under the
  // catalog's lock: a Copy sees the put and what `then` did, or neither.
  void Put(const std::string& name, NodeInfo info,
           const std::function<void(std::uint64_t)>& then = nullptr);
  void Remove(const std::string& name);
  // The whole set (after a list of the API server's nodes).
  void Replace(std::unordered_map<std::string, NodeInfo> infos);
  // The whole set and (if asked) the generation it is at.
  std::unordered_map<std::string, NodeInfo> Copy(std::uint64_t* generation = nullptr) const;
  std::uint64_t generation() const { return generation_.load(); }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, NodeInfo> infos_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace tidal::extender
