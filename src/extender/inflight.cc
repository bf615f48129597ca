#include "tidal/extender/inflight.h"

#include <map>
#include <set>

namespace tidal::extender {

void InFlight::Add(Reservation r) {
  std::lock_guard<std::mutex> lock(mu_);
  book_.Add(std::move(r));
  ++generation_;
}

bool InFlight::Remove(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool removed = book_.Remove(pod);
  generation_ += removed ? 1 : 0;
  return removed;
}

void InFlight::MarkRequestedCounted(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_ += book_.MarkRequestedCounted(pod) ? 1 : 0;
}

void InFlight::Expire(TimeMs now_ms, const MetricsSnapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (book_.size() == 0) return;
  std::map<std::string, TimeMs> sample_times;
  for (const auto& [pod, r] : book_.all()) {
    const auto it = snapshot.nodes.find(r.node);
    if (it != snapshot.nodes.end() && it->second.usable)
      sample_times.emplace(r.node, it->second.sample_time_ms);
  }
  const std::size_t before_size = book_.size(), before_flight = book_.in_flight();
  book_.Expire(now_ms, sample_times);
  if (book_.size() != before_size || book_.in_flight() != before_flight) ++generation_;
}

std::shared_ptr<const NodeMap> InFlight::Overlay(const NodeMap& base) const {
  auto out = std::make_shared<NodeMap>();
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> nodes;
  for (const auto& [pod, r] : book_.all()) nodes.insert(r.node);
  for (const auto& name : nodes) {
    const auto it = base.find(name);
    if (it == base.end()) continue;  // not known yet: judged unknown, nothing to add to
    NodeState n = it->second;
    book_.ApplyTo(n, slots_per_gpu_);
    out->emplace(name, std::move(n));
  }
  return out;
}

std::uint64_t InFlight::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

std::size_t InFlight::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_.in_flight();
}

std::size_t InFlight::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_.size();
}

}  // namespace tidal::extender
