#pragma once
// The extender's in-flight reservations (docs/design.md#reservations): what /bind placed, kept
// until metrics show it, the pod is gone, or the TTL passes. Thread-safe; the
// refresher expires them against each new snapshot and the view carries the
// affected nodes with the reservations applied (ClusterView::reserved).
//
// A bind changes one node's reservations: Overlay() makes that node again into
// a small tier of recent changes (ClusterView::recent) and shares everything
// else with the previous overlay. The recent tier is folded into the larger one
// when it outgrows the square root of it, so a bind's work stays near
// O(sqrt(reserved nodes)) in a burst instead of O(reserved nodes).
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "tidal/extender/view.h"
#include "tidal/metrics/reservations.h"

namespace tidal::extender {

class InFlight {
 public:
  InFlight(ReservationOptions options, int nvlink_slots_per_gpu)
      : book_(options), slots_per_gpu_(nvlink_slots_per_gpu) {}

  void Add(Reservation r);
  bool Remove(const std::string& pod);
  // The pod watch shows the pod bound: the node catalog counts its GPUs (and the
  // GPUs its annotation names) from `catalog_generation` on. An overlay made
  // against nodes built from an older catalog still adds them.
  void MarkRequestedCounted(const std::string& pod, std::uint64_t catalog_generation);
  // Ends what the snapshot's samples show, and what is past the TTL.
  void Expire(TimeMs now_ms, const MetricsSnapshot& snapshot);

  struct Overlaid {
    std::shared_ptr<const ReservedMap> reserved = std::make_shared<const ReservedMap>();
    // Nodes changed since `reserved` was made, looked up before it; an entry that
    // points into the base map says the node holds no reservations any more.
    std::shared_ptr<const ReservedMap> recent = std::make_shared<const ReservedMap>();
    std::uint64_t generation = 0;  // the reservations it shows
  };
  // The nodes of `base` (built from the catalog at `catalog_generation`) that hold
  // reservations, with them applied. Given `previous`, an overlay made against the
  // same base, only the nodes whose reservations changed since are made again.
  Overlaid Overlay(const std::shared_ptr<const NodeMap>& base, std::uint64_t catalog_generation,
                   const Overlaid* previous = nullptr) const;
  // Changes with every Add, Remove and Expire that changed something.
  std::uint64_t generation() const;
  std::size_t in_flight() const;
  // Whether `pod` (namespace/name) holds a reservation.
  bool Holds(const std::string& pod) const;
  std::size_t size() const;

 private:
  void Touch(const std::string& node);  // with mu_ held: its reservations changed
  void Unlink(const std::string& pod, const std::string& node);  // from pods_by_node_
  bool Counted(const std::string& pod, std::uint64_t catalog_generation) const;

  mutable std::mutex mu_;
  ReservationBook book_;
  int slots_per_gpu_;
  std::uint64_t generation_ = 0;
  // Which nodes changed at which generation, oldest first; trimmed when long, and
  // an overlay older than the trimmed part is made whole again.
  std::deque<std::pair<std::uint64_t, std::string>> changes_;
  std::uint64_t forgotten_before_ = 0;
  std::unordered_map<std::string, std::set<std::string>> pods_by_node_;
  std::unordered_map<std::string, std::uint64_t> counted_at_;  // pod → catalog generation
};

}  // namespace tidal::extender
