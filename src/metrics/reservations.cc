#include "tidal/metrics/reservations.h"

namespace tidal {

void ReservationBook::Add(Reservation r) {
  std::string key = r.pod;
  by_pod_[std::move(key)] = std::move(r);
}

void ReservationBook::Remove(const std::string& pod) { by_pod_.erase(pod); }

void ReservationBook::Expire(TimeMs now_ms, const std::map<std::string, TimeMs>& sample_time_by_node) {
  for (auto it = by_pod_.begin(); it != by_pod_.end();) {
    const Reservation& r = it->second;
    bool drop = now_ms - r.placed_at_ms >= options_.ttl_ms;
    if (auto s = sample_time_by_node.find(r.node); s != sample_time_by_node.end())
      drop = drop || s->second >= r.placed_at_ms + options_.visible_after_ms;
    it = drop ? by_pod_.erase(it) : std::next(it);
  }
}

void ReservationBook::ApplyTo(NodeState& node, int slots_per_gpu) const {
  int nvlink_pods = 0;
  bool any = false;
  for (const auto& [pod, r] : by_pod_) {
    if (r.node != node.name) continue;
    any = true;
    nvlink_pods += r.uses_nvlink ? 1 : 0;
    for (auto& g : node.gpus)
      if (g.index >= 0 && g.index < kMaxGpusPerNode && r.gpus.Has(g.index)) g.memory_used += r.memory_per_gpu;
  }
  if (!any) return;
  node.nvlink_competition +=
      NvlinkCompetitionIndex(nvlink_pods, static_cast<int>(node.gpus.size()), slots_per_gpu);
  node.Finalize();
}

}  // namespace tidal
