#include "tidal/extender/inflight.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace tidal::extender {

void InFlight::Touch(const std::string& node) {
  changes_.emplace_back(generation_, node);
  // A few thousand binds' worth: an overlay this far behind is made whole anyway
  // (the refresher makes one against new nodes every half second while they change).
  constexpr std::size_t kKeep = 4096;
  while (changes_.size() > kKeep) {
    forgotten_before_ = changes_.front().first + 1;
    changes_.pop_front();
  }
}

void InFlight::Unlink(const std::string& pod, const std::string& node) {
  const auto it = pods_by_node_.find(node);
  if (it == pods_by_node_.end()) return;
  it->second.erase(pod);
  if (it->second.empty()) pods_by_node_.erase(it);
}

void InFlight::Add(Reservation r) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string node = r.node;
  ++generation_;
  if (const auto it = book_.all().find(r.pod); it != book_.all().end()) {
    Unlink(r.pod, it->second.node);  // placed again, maybe elsewhere
    Touch(it->second.node);
  }
  counted_at_.erase(r.pod);
  pods_by_node_[node].insert(r.pod);
  book_.Add(std::move(r));
  Touch(node);
}

bool InFlight::Remove(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  counted_at_.erase(pod);
  const auto it = book_.all().find(pod);
  if (it == book_.all().end()) return false;
  const std::string node = it->second.node;
  book_.Remove(pod);
  Unlink(pod, node);
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
    if (it == book_.all().end()) Unlink(pod, was.first);
    if (it == book_.all().end() || it->second.in_flight != was.second) changed.push_back(was.first);
  }
  if (changed.empty()) return;
  ++generation_;
  for (const auto& node : changed) Touch(node);
}

namespace {
// The fold point: past it, the recent tier costs a bind more than folding would.
std::size_t FoldAt(std::size_t reserved) {
  std::size_t root = 1;
  while (root * root < reserved) ++root;
  return std::max<std::size_t>(16, root);
}
}  // namespace

InFlight::Overlaid InFlight::Overlay(const std::shared_ptr<const NodeMap>& base,
                                     std::uint64_t catalog_generation,
                                     const Overlaid* previous) const {
  std::unordered_map<std::string, std::vector<Reservation>> by_node;
  std::unordered_set<std::string> redo;
  Overlaid out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (previous && previous->generation < forgotten_before_) previous = nullptr;
    if (previous) {
      for (auto it = changes_.rbegin(); it != changes_.rend() && it->first > previous->generation;
           ++it)
        redo.insert(it->second);
    } else {
      for (const auto& [node, pods] : pods_by_node_) redo.insert(node);
    }
    for (const auto& node : redo) {
      const auto pods = pods_by_node_.find(node);
      if (pods == pods_by_node_.end()) continue;
      auto& list = by_node[node];
      for (const auto& pod : pods->second) {
        Reservation copy = book_.all().at(pod);
        copy.requested_counted = Counted(pod, catalog_generation);
        list.push_back(std::move(copy));
      }
    }
    out.generation = generation_;
  }
  // Made again: the changed nodes into a copy of the recent tier (small), the
  // larger tier shared.
  auto recent =
      previous ? std::make_shared<ReservedMap>(*previous->recent) : std::make_shared<ReservedMap>();
  for (const auto& name : redo) {
    const auto rs = by_node.find(name);
    const auto it = base->find(name);
    // A node not known yet is judged unknown: nothing to add to.
    if (it == base->end()) {
      recent->erase(name);
      continue;
    }
    if (rs != by_node.end()) {
      NodeState n = it->second;
      ApplyReservations(rs->second, slots_per_gpu_, n);
      (*recent)[name] = std::make_shared<const NodeState>(std::move(n));
    } else if (previous && previous->reserved->count(name)) {
      (*recent)[name] = std::shared_ptr<const NodeState>(base, &it->second);  // unreserved
    } else {
      recent->erase(name);
    }
  }
  const std::shared_ptr<const ReservedMap> older =
      previous ? previous->reserved : std::make_shared<const ReservedMap>();
  if (recent->size() <= FoldAt(older->size()) && previous) {
    out.reserved = older;
    out.recent = std::move(recent);
    return out;
  }
  auto folded = std::make_shared<ReservedMap>(*older);
  for (auto& [name, node] : *recent) {
    const auto it = base->find(name);
    if (it != base->end() && node.get() == &it->second) {
      folded->erase(name);
    } else {
      (*folded)[name] = std::move(node);
    }
  }
  out.reserved = std::move(folded);
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

bool InFlight::Holds(const std::string& pod) const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_.all().count(pod) > 0;
}

std::size_t InFlight::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_.size();
}

}  // namespace tidal::extender
