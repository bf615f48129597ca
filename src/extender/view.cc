#include "tidal/extender/view.h"

#include <algorithm>

namespace tidal::extender {

namespace {
void ApplyInfo(const NodeInfo& info, NodeState* n) {
  n->labels = info.labels;
  n->allocatable_gpus = info.allocatable_gpus;
  n->gpus_requested = info.gpus_requested;
  n->cpu_milli_allocatable = info.cpu_milli_allocatable;
  n->memory_allocatable = info.memory_allocatable;
}
}  // namespace

void BuildNodes(const MetricsSnapshot* snapshot,
                const std::unordered_map<std::string, NodeInfo>& infos,
                std::unordered_map<std::string, NodeState>* out) {
  out->clear();
  out->reserve(std::max(snapshot ? snapshot->nodes.size() : 0, infos.size()));
  for (const auto& [name, info] : infos) {
    if (snapshot && snapshot->nodes.count(name)) continue;
    NodeState n;
    n.name = name;
    n.metrics_known = false;
    ApplyInfo(info, &n);
    n.Finalize();
    out->emplace(name, std::move(n));
  }
  if (!snapshot) return;
  for (const auto& [name, m] : snapshot->nodes) {
    NodeState n;
    n.name = name;
    n.gpus = m.gpus;
    n.storage_await_ms = m.storage_await_ms;
    n.nvlink_competition = m.nvlink_competition;
    n.sample_time_ms = m.sample_time_ms;
    n.metrics_known = m.usable;
    if (!m.usable) n.gpus.clear();  // an unusable reading is not shown as load
    if (const auto it = infos.find(name); it != infos.end()) ApplyInfo(it->second, &n);
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

void NodeCatalog::Remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (infos_.erase(name)) generation_.fetch_add(1);
}

void NodeCatalog::Replace(std::unordered_map<std::string, NodeInfo> infos) {
  std::lock_guard<std::mutex> lock(mu_);
  infos_ = std::move(infos);
  generation_.fetch_add(1);
}

std::unordered_map<std::string, NodeInfo> NodeCatalog::Copy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return infos_;
}

}  // namespace tidal::extender
