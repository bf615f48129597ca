#pragma once
// In-flight reservations (DESIGN §6): pods placed since the metrics snapshot was
// taken are invisible to it. Each placement is kept here and added to its node's
// load until metrics newer than the placement show it, the pod is gone, or a TTL
// passes; without this a burst lands on the one idle node (the herd effect).
#include <map>
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/types.h"

namespace tidal {

struct Reservation {
  std::string pod;  // namespace/name
  std::string node;
  GpuSet gpus;
  Bytes memory_per_gpu = 0;
  bool uses_nvlink = false;
  TimeMs placed_at_ms = 0;
};

struct ReservationOptions {
  // A sample must be at least this much newer than the placement to count as
  // showing the pod (the pod's container needs time to start and allocate).
  TimeMs visible_after_ms = 15'000;
  TimeMs ttl_ms = 120'000;
};

class ReservationBook {
 public:
  explicit ReservationBook(ReservationOptions options = {}) : options_(options) {}

  void Add(Reservation r);
  void Remove(const std::string& pod);
  // Drops reservations that the node's sample (taken at `sample_time_ms`) includes,
  // and those past their TTL at `now_ms`.
  void Expire(TimeMs now_ms, const std::map<std::string, TimeMs>& sample_time_by_node);
  // Adds the node's reservations to its GPUs' used memory and its NVLink
  // competition index, then re-derives the node's load. `slots_per_gpu` turns
  // NVLink pods into the index.
  void ApplyTo(NodeState& node, int slots_per_gpu) const;

  std::size_t size() const { return by_pod_.size(); }
  const std::map<std::string, Reservation>& all() const { return by_pod_; }

 private:
  ReservationOptions options_;
  std::map<std::string, Reservation> by_pod_;
};

}  // namespace tidal
