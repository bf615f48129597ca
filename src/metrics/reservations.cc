#include "tidal/metrics/reservations.h"

#include <algorithm>

namespace tidal {

void ReservationBook::Add(Reservation r) {
  r.in_flight = true;
  std::string key = r.pod;
  by_pod_[std::move(key)] = std::move(r);
}

bool ReservationBook::Remove(const std::string& pod) { return by_pod_.erase(pod) > 0; }

bool ReservationBook::MarkRequestedCounted(const std::string& pod) {
  const auto it = by_pod_.find(pod);
  if (it == by_pod_.end() || it->second.requested_counted) return false;
  it->second.requested_counted = true;
  return true;
}

std::size_t ReservationBook::in_flight() const {
  std::size_t n = 0;
  for (const auto& [pod, r] : by_pod_) n += r.in_flight ? 1 : 0;
  return n;
}

void ReservationBook::Expire(TimeMs now_ms,
                             const std::map<std::string, TimeMs>& sample_time_by_node) {
  for (auto it = by_pod_.begin(); it != by_pod_.end();) {
    Reservation& r = it->second;
    bool seen = now_ms - r.placed_at_ms >= options_.ttl_ms;
    if (auto s = sample_time_by_node.find(r.node); s != sample_time_by_node.end())
      seen = seen || s->second >= r.placed_at_ms + options_.visible_after_ms;
    if (seen) r.in_flight = false;
    it = (seen && !options_.claims) ? by_pod_.erase(it) : std::next(it);
  }
}

void ReservationBook::ApplyTo(NodeState& node, int slots_per_gpu) const {
  std::vector<Reservation> mine;
  for (const auto& [pod, r] : by_pod_)
    if (r.node == node.name) mine.push_back(r);
  ApplyReservations(mine, slots_per_gpu, node);
}

void ApplyReservations(const std::vector<Reservation>& reservations, int slots_per_gpu,
                       NodeState& node) {
  if (reservations.empty()) return;
  int nvlink_pods = 0;
  Bytes in_flight[kMaxGpusPerNode] = {};
  Bytes claimed[kMaxGpusPerNode] = {};
  int slots_taken[kMaxGpusPerNode] = {};
  for (const Reservation& r : reservations) {
    if (r.in_flight) nvlink_pods += r.uses_nvlink ? 1 : 0;
    if (r.in_flight && !r.requested_counted)
      node.gpus_requested += std::max(r.gpus.Count(), r.gpu_count);
    for (std::uint64_t b = r.gpus.bits(); b != 0; b &= b - 1) {
      const int g = std::countr_zero(b);
      if (r.in_flight) in_flight[g] += r.memory_per_gpu;
      claimed[g] += r.memory_per_gpu;
      // Until the pod watch shows the pod with its GPUs, its device slot is ours to count.
      slots_taken[g] += r.requested_counted ? 0 : 1;
    }
  }
  for (auto& g : node.gpus) {
    if (g.index < 0 || g.index >= kMaxGpusPerNode) continue;
    g.memory_used = std::max(g.memory_used + in_flight[g.index], claimed[g.index]);
    if (g.free_slots > 0) g.SetFreeSlots(std::max(0, g.free_slots - slots_taken[g.index]));
  }
  node.nvlink_competition +=
      NvlinkCompetitionIndex(nvlink_pods, static_cast<int>(node.gpus.size()), slots_per_gpu);
  node.Finalize();
}

NodeState AfterPlacing(const NodeState& node, const PodDemand& pod, GpuSet gpus,
                       Bytes memory_per_gpu, bool uses_nvlink, int slots_per_gpu) {
  NodeState after = node;
  Reservation r;
  r.pod = pod.Key();
  r.node = node.name;
  r.gpus = gpus;
  r.gpu_count = pod.gpu_count;
  r.memory_per_gpu = memory_per_gpu;
  r.uses_nvlink = uses_nvlink;
  r.requested_counted = false;
  after.cpu_milli_requested += pod.cpu_milli;
  after.memory_requested += pod.memory_request;
  ApplyReservations({r}, slots_per_gpu, after);  // Finalize()s
  return after;
}

}  // namespace tidal
