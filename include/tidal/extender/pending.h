#pragma once
// The pods waiting to be scheduled, as kube-scheduler's active queue orders them
// (its default QueueSort, PrioritySort: higher spec.priority first, then the
// earlier creation), from a watch of the unbound pods (spec.nodeName=). The
// look-ahead asks it which pod comes after the one being scheduled. Pods whose
// PodScheduled condition says Unschedulable wait outside the active queue and
// are left out; so are pods past kMaxPendingPods (the newest: the queue's tail).
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/kube/informer.h"

namespace tidal::extender {

// Enough for any queue a look-ahead reads the head of; past it a pod is not
// kept (memory stays bounded whatever the API server sends).
inline constexpr std::size_t kMaxPendingPods = 100'000;
// Pods passed over at the queue's head (the pod itself, pods being bound)
// before the look-ahead gives up: the lookup stays short under the lock.
inline constexpr int kMaxPendingSkipped = 16;

class PendingPods : public kube::InformerHandler {
 public:
  explicit PendingPods(std::shared_ptr<spdlog::logger> log, std::size_t max_pods = kMaxPendingPods);

  void Replace(const std::vector<std::string>& objects) override;
  void Apply(const kube::WatchEvent& event) override;

  // The pod kube-scheduler takes after `uid` (the pod being scheduled): the first
  // of the same scheduler in queue order other than it and than the pods for which
  // `skip(namespace/name)` holds (those being bound). nullopt when `uid` is not
  // pending here, or no such pod is within kMaxPendingSkipped of the head.
  std::optional<PodDemand> NextAfter(const std::string& uid,
                                     const std::function<bool(const std::string&)>& skip) const;

  std::size_t size() const;
  std::uint64_t decode_errors() const;

 private:
  // Queue order within a scheduler: priority descending, creation, then the UID.
  using Order = std::tuple<std::string, std::int64_t, std::string, std::string>;
  struct Entry {
    Order order;
    PodDemand demand;
  };
  struct Decoded {
    Status status;
    std::string uid;
    std::optional<Entry> entry;  // none: not in the active queue
  };
  Decoded Decode(std::string_view json) const;
  void Erase(const std::string& uid);  // caller holds mu_

  std::shared_ptr<spdlog::logger> log_;
  const std::size_t max_pods_;
  mutable std::mutex mu_;
  std::set<Order> queue_;
  std::unordered_map<std::string, Entry> by_uid_;
  std::uint64_t decode_errors_ = 0;
};

}  // namespace tidal::extender
