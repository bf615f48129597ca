#pragma once
// The extender's in-flight reservations (DESIGN §6): what /bind placed, kept
// until metrics show it, the pod is gone, or the TTL passes. Thread-safe; the
// refresher expires them against each new snapshot and the view carries the
// affected nodes with the reservations applied (ClusterView::reserved).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "tidal/extender/view.h"
#include "tidal/metrics/reservations.h"

namespace tidal::extender {

class InFlight {
 public:
  InFlight(ReservationOptions options, int nvlink_slots_per_gpu)
      : book_(options), slots_per_gpu_(nvlink_slots_per_gpu) {}

  void Add(Reservation r);
  bool Remove(const std::string& pod);
  // The pod watch shows the pod bound: the API server's counts include it.
  void MarkRequestedCounted(const std::string& pod);
  // Ends what the snapshot's samples show, and what is past the TTL.
  void Expire(TimeMs now_ms, const MetricsSnapshot& snapshot);
  // The nodes of `base` holding reservations, with them applied.
  std::shared_ptr<const NodeMap> Overlay(const NodeMap& base) const;
  // Changes with every Add, Remove and Expire that changed something.
  std::uint64_t generation() const;
  std::size_t in_flight() const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  ReservationBook book_;
  int slots_per_gpu_;
  std::uint64_t generation_ = 0;
};

}  // namespace tidal::extender
