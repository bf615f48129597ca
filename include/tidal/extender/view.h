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

// Nodes by name for the request path (extender/fastpath/node_index.h).
class NodeIndex;

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
  bool Indexed() const;
  // The node named `name`, recent and reserved first; null when unknown.
  const NodeState* Find(std::string_view name) const;
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
  void Publish(std::shared_ptr<const ClusterView> v);

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
