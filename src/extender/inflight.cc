#include "tidal/extender/inflight.h"

#include <unordered_set>
#include <vector>

namespace tidal::extender {

void InFlight::Touch(const std::string& node) {
  changed_at_[node] = generation_;
  constexpr std::size_t kSlack = 1024;
  if (changed_at_.size() <= 2 * book_.size() + kSlack) return;
  std::unordered_set<std::string> reserved;
  for (const auto& [pod, r] : book_.all()) reserved.insert(r.node);
  for (auto it = changed_at_.begin(); it != changed_at_.end();)
    it = reserved.count(it->first) ? std::next(it) : changed_at_.erase(it);
  forgotten_before_ = generation_;
}

void InFlight::Add(Reservation r) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string node = r.node;
  counted_at_.erase(r.pod);
  book_.Add(std::move(r));
  ++generation_;
  Touch(node);
}

bool InFlight::Remove(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  counted_at_.erase(pod);
  const auto it = book_.all().find(pod);
  if (it == book_.all().end()) return false;
  const std::string node = it->second.node;
  book_.Remove(pod);
  ++generation_;
  Touch(node);
  return true;
}

void InFlight::MarkRequestedCounted(const std::string& pod, std::uint64_t catalog_generation) {
  std::lock_guard<std::mutex> lock(mu_);
  // Takes effect when an overlay is made against that catalog's nodes, which is
  // a new base anyway: no node changes now.
  if (book_.all().count(pod) && !counted_at_.count(pod)) counted_at_[pod] = catalog_generation;
}

bool InFlight::Counted(const std::string& pod, std::uint64_t catalog_generation) const {
  const auto it = counted_at_.find(pod);
  return it != counted_at_.end() && it->second <= catalog_generation;
}

void InFlight::Expire(TimeMs now_ms, const MetricsSnapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (book_.size() == 0) return;
  std::map<std::string, TimeMs> sample_times;
  std::map<std::string, std::pair<std::string, bool>> before;  // pod → node, in flight
  for (const auto& [pod, r] : book_.all()) {
    before.emplace(pod, std::make_pair(r.node, r.in_flight));
    const auto it = snapshot.nodes.find(r.node);
    if (it != snapshot.nodes.end() && it->second.usable)
      sample_times.emplace(r.node, it->second.sample_time_ms);
  }
  book_.Expire(now_ms, sample_times);
  std::vector<std::string> changed;
  for (const auto& [pod, was] : before) {
    const auto it = book_.all().find(pod);
    if (it == book_.all().end() || it->second.in_flight != was.second) changed.push_back(was.first);
  }
  if (changed.empty()) return;
  ++generation_;
  for (const auto& node : changed) Touch(node);
}

InFlight::Overlaid InFlight::Overlay(const NodeMap& base, std::uint64_t catalog_generation,
                                     const ReservedMap* previous, std::uint64_t since) const {
  std::unordered_map<std::string, std::vector<Reservation>> by_node;
  std::unordered_set<std::string> redo;
  Overlaid out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool whole = !previous || since < forgotten_before_;
    if (!whole)
      for (const auto& [node, at] : changed_at_)
        if (at > since) redo.insert(node);
    if (whole) previous = nullptr;
    for (const auto& [pod, r] : book_.all()) {
      if (!whole && !redo.count(r.node)) continue;
      if (whole) redo.insert(r.node);
      Reservation copy = r;
      copy.requested_counted = Counted(pod, catalog_generation);
      by_node[r.node].push_back(std::move(copy));
    }
    out.generation = generation_;
  }
  auto reserved =
      previous ? std::make_shared<ReservedMap>(*previous) : std::make_shared<ReservedMap>();
  for (const auto& name : redo) {
    reserved->erase(name);
    const auto rs = by_node.find(name);
    const auto it = base.find(name);
    // A node not known yet is judged unknown: nothing to add to.
    if (rs == by_node.end() || it == base.end()) continue;
    NodeState n = it->second;
    ApplyReservations(rs->second, slots_per_gpu_, n);
    reserved->emplace(name, std::make_shared<const NodeState>(std::move(n)));
  }
  out.reserved = std::move(reserved);
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
