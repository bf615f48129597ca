#pragma once
// In-flight reservations and GPU memory claims (docs/design.md#reservations).
//
// Pods placed since the metrics snapshot was taken are invisible to it; without
// accounting, a burst lands on the one idle node (the herd effect). Each placement
// is kept here with its estimated memory per GPU:
//  - while it is *in flight* (no sample taken `visible_after` after the placement
//    has shown it, and the TTL has not passed) its memory and NVLink use are added
//    to the node's measured load;
//  - after that, and until the pod is gone, its estimate stays a *claim*: a GPU's
//    used memory is taken as at least the sum of its pods' claims. Real memory
//    ramps from the CUDA context to its peak over minutes, so a sample that shows
//    the pod does not yet show all it will use.
#include <map>
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/types.h"

namespace tidal {

struct Reservation {
  std::string pod;  // namespace/name
  std::string node;
  GpuSet gpus;        // may be empty on a node without metrics
  int gpu_count = 0;  // GPUs the pod takes (counts even when `gpus` is unknown)
  Bytes memory_per_gpu = 0;
  bool uses_nvlink = false;
  TimeMs placed_at_ms = 0;
  bool in_flight = true;  // cleared by Expire
  // The API server's node state already counts the pod's GPUs (gpus_requested).
  // The simulator's does at once; the extender's only once the pod watch shows the
  // binding: until then the reservation adds them, so the fallback's "remaining
  // allocatable GPUs" does not herd either.
  bool requested_counted = true;
};

struct ReservationOptions {
  // A sample must be at least this much newer than the placement to show the pod
  // (the scrape interval: the agent's sample must have been scraped).
  TimeMs visible_after_ms = 15'000;
  TimeMs ttl_ms = 120'000;  // in flight at most this long, whatever the samples say
  bool claims = true;       // keep the estimate as a floor while the pod runs
};

class ReservationBook {
 public:
  explicit ReservationBook(ReservationOptions options = {}) : options_(options) {}

  void Add(Reservation r);
  // The pod is gone (finished, deleted, evicted): forget it.
  // Returns whether it was there.
  bool Remove(const std::string& pod);
  // The API server's view of the node now counts the pod's GPUs.
  bool MarkRequestedCounted(const std::string& pod);
  // Ends the in-flight period of the placements that the node's latest sample
  // (taken at `sample_time_ms`) shows, and of those past the TTL at `now_ms`.
  // Without claims they are dropped; with claims they stay as floors.
  void Expire(TimeMs now_ms, const std::map<std::string, TimeMs>& sample_time_by_node);
  // ApplyReservations with this node's reservations.
  void ApplyTo(NodeState& node, int slots_per_gpu) const;

  std::size_t size() const { return by_pod_.size(); }
  std::size_t in_flight() const;
  const std::map<std::string, Reservation>& all() const { return by_pod_; }

 private:
  ReservationOptions options_;
  std::map<std::string, Reservation> by_pod_;
};

// Applies one node's reservations: per GPU, used = max(measured + in-flight
// reservations, Σ claims); the NVLink index grows by the in-flight NVLink pods.
// What the API server does not count yet is added: the pod's GPUs to
// gpus_requested, and a device slot taken on each GPU it was given. Re-derives
// the node's load.
void ApplyReservations(const std::vector<Reservation>& reservations, int slots_per_gpu,
                       NodeState& node);

// `node` as it looks right after `pod` is placed on it with `gpus` (what /bind's
// reservation adds, and the pod's CPU and memory requests): the look-ahead's
// view of a candidate.
NodeState AfterPlacing(const NodeState& node, const PodDemand& pod, GpuSet gpus,
                       Bytes memory_per_gpu, bool uses_nvlink, int slots_per_gpu);

}  // namespace tidal
