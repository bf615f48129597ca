#pragma once
// The extender's in-flight reservations (DESIGN §6): what /bind placed, kept
// until metrics show it, the pod is gone, or the TTL passes. Thread-safe; the
// refresher expires them against each new snapshot and the view carries the
// affected nodes with the reservations applied (ClusterView::reserved).
//
// A bind changes one node's reservations; Overlay() then makes that node again
// and shares the others with the previous overlay, so a bind costs the same at
// 10 nodes and at 5 000.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
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
    std::shared_ptr<const ReservedMap> reserved;
    std::uint64_t generation = 0;  // the reservations it shows
  };
  // The nodes of `base` (built from the catalog at `catalog_generation`) that hold
  // reservations, with them applied. Given `previous`, an overlay made against the
  // same base at generation `since`, only the nodes whose reservations changed
  // since are made again; the others are shared with it.
  Overlaid Overlay(const NodeMap& base, std::uint64_t catalog_generation,
                   const ReservedMap* previous = nullptr, std::uint64_t since = 0) const;
  // Changes with every Add, Remove and Expire that changed something.
  std::uint64_t generation() const;
  std::size_t in_flight() const;
  std::size_t size() const;

 private:
  void Touch(const std::string& node);  // with mu_ held: its reservations changed
  bool Counted(const std::string& pod, std::uint64_t catalog_generation) const;

  mutable std::mutex mu_;
  ReservationBook book_;
  int slots_per_gpu_;
  std::uint64_t generation_ = 0;
  // The generation of each node's last change; entries of nodes without
  // reservations are dropped when they pile up, and an overlay older than the
  // drop is made whole again.
  std::unordered_map<std::string, std::uint64_t> changed_at_;
  std::uint64_t forgotten_before_ = 0;
  std::unordered_map<std::string, std::uint64_t> counted_at_;  // pod → catalog generation
};

}  // namespace tidal::extender
