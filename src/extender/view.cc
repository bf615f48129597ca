#include "tidal/extender/view.h"

namespace tidal::extender {

void BuildNodes(const MetricsSnapshot& snapshot,
                const std::unordered_map<std::string, NodeInfo>& infos,
                std::unordered_map<std::string, NodeState>* out) {
  out->clear();
  out->reserve(snapshot.nodes.size());
  for (const auto& [name, m] : snapshot.nodes) {
    NodeState n;
    n.name = name;
    n.gpus = m.gpus;
    n.storage_await_ms = m.storage_await_ms;
    n.nvlink_competition = m.nvlink_competition;
    n.sample_time_ms = m.sample_time_ms;
    n.metrics_known = m.usable;
    if (!m.usable) n.gpus.clear();  // an unusable reading is not shown as load
    if (const auto it = infos.find(name); it != infos.end()) {
      n.labels = it->second.labels;
      n.allocatable_gpus = it->second.allocatable_gpus;
      n.gpus_requested = it->second.gpus_requested;
      n.cpu_milli_allocatable = it->second.cpu_milli_allocatable;
      n.memory_allocatable = it->second.memory_allocatable;
    }
    n.Finalize();
    out->emplace(name, std::move(n));
  }
}

void NodeCatalog::Put(const std::string& name, NodeInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = infos_[name];
  if (slot.labels == info.labels && slot.allocatable_gpus == info.allocatable_gpus &&
      slot.gpus_requested == info.gpus_requested &&
      slot.cpu_milli_allocatable == info.cpu_milli_allocatable &&
      slot.memory_allocatable == info.memory_allocatable)
    return;
  slot = std::move(info);
  generation_.fetch_add(1);
}

std::unordered_map<std::string, NodeInfo> NodeCatalog::Copy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return infos_;
}

}  // namespace tidal::extender
