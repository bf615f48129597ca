#include "tidal/extender/pending.h"

#include <limits>

#include "tidal/kubetypes/pod.h"

namespace tidal::extender {

PendingPods::PendingPods(std::shared_ptr<spdlog::logger> log, std::size_t max_pods)
    : log_(std::move(log)), max_pods_(max_pods) {}

// Decoding happens outside the lock: a relist of many pods never holds up a
// look-ahead for longer than the swap.
PendingPods::Decoded PendingPods::Decode(std::string_view json) const {
  Decoded out;
  RawPod raw;
  out.status = DecodePodJson(json, &raw);
  if (!out.status.ok()) return out;
  out.uid = raw.uid;
  // Bound, finished or waiting for the cluster to change: not in the active queue.
  if (!raw.node_name.empty() || raw.phase == "Succeeded" || raw.phase == "Failed" ||
      raw.unschedulable || raw.uid.empty())
    return out;
  out.entry =
      Entry{Order{raw.scheduler_name, -raw.priority, raw.created, raw.uid}, ToPodDemand(raw)};
  return out;
}

void PendingPods::Replace(const std::vector<std::string>& objects) {
  std::set<Order> queue;
  std::unordered_map<std::string, Entry> by_uid;
  std::uint64_t errors = 0;
  std::string first_error;
  for (const std::string& json : objects) {
    Decoded d = Decode(json);
    if (!d.status.ok()) {
      if (errors++ == 0) first_error = d.status.reason();
      continue;
    }
    if (!d.entry || by_uid.size() >= max_pods_) continue;
    if (const auto old = by_uid.find(d.uid); old != by_uid.end()) queue.erase(old->second.order);
    queue.insert(d.entry->order);
    by_uid.insert_or_assign(d.uid, std::move(*d.entry));
  }
  if (errors) log_->warn("pending pods: {} not decoded, the first: {}", errors, first_error);
  std::lock_guard<std::mutex> lock(mu_);
  queue_.swap(queue);
  by_uid_.swap(by_uid);
  decode_errors_ += errors;
}

void PendingPods::Apply(const kube::WatchEvent& event) {
  Decoded d = Decode(event.object);
  std::lock_guard<std::mutex> lock(mu_);
  if (!d.status.ok()) {
    if (decode_errors_++ == 0) log_->warn("pending pods: {}", d.status.reason());
    return;
  }
  Erase(d.uid);
  if (event.type == kube::WatchEvent::Type::kDeleted || !d.entry) return;
  if (by_uid_.size() >= max_pods_) return;
  queue_.insert(d.entry->order);
  by_uid_.emplace(d.uid, std::move(*d.entry));
}

void PendingPods::Erase(const std::string& uid) {
  const auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return;
  queue_.erase(it->second.order);
  by_uid_.erase(it);
}

std::optional<PodDemand> PendingPods::NextAfter(
    const std::string& uid, const std::function<bool(const std::string&)>& skip) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto self = by_uid_.find(uid);
  if (self == by_uid_.end()) return std::nullopt;
  const std::string& scheduler = std::get<0>(self->second.order);
  int looked = 0;
  for (auto it =
           queue_.lower_bound(Order{scheduler, std::numeric_limits<std::int64_t>::min(), "", ""});
       it != queue_.end() && std::get<0>(*it) == scheduler && looked <= kMaxPendingSkipped;
       ++it, ++looked) {
    if (*it == self->second.order) continue;
    const PodDemand& next = by_uid_.at(std::get<3>(*it)).demand;
    if (!skip(next.Key())) return next;
  }
  return std::nullopt;
}

std::size_t PendingPods::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_uid_.size();
}

std::uint64_t PendingPods::decode_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decode_errors_;
}

}  // namespace tidal::extender
