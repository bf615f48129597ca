#include "tidal/extender/view.h"

#include <algorithm>
#include <cstring>

#include "extender/fastpath/node_index.h"

namespace tidal::extender {

bool ClusterView::Indexed() const {
  return index && index->Indexes(nodes.get()) && reserved_index &&
         reserved_index->Indexes(reserved.get()) && recent_index &&
         recent_index->Indexes(recent.get());
}

const NodeState* ClusterView::Find(std::string_view name) const {
  if (Indexed()) {
    const NodeIndex::Entry* e = LookupIndexed(*this, name, NodeIndex::Hash(name));
    return e ? e->node : nullptr;
  }
  return FindInMaps(std::string(name));
}

void ViewStore::Publish(std::shared_ptr<const ClusterView> v) {
  if (!v->Indexed()) {
    auto indexed = std::make_shared<ClusterView>(*v);
    const auto stale = [](const auto& index, const auto& map) {
      return !index || !index->Indexes(map.get());
    };
    if (stale(v->index, v->nodes)) indexed->index = std::make_shared<const NodeIndex>(v->nodes);
    if (stale(v->reserved_index, v->reserved))
      indexed->reserved_index = std::make_shared<const NodeIndex>(v->reserved);
    if (stale(v->recent_index, v->recent))
      indexed->recent_index = std::make_shared<const NodeIndex>(v->recent);
    v = std::move(indexed);
  }
  std::lock_guard<std::mutex> publish(publish_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    view_.swap(v);
  }
  // The view just replaced may still be in a request's hands, and whoever drops
  // the last reference frees it (a 1 000-node view takes milliseconds): keep it
  // until the next publish, so that it is freed here, by the publisher, not by a
  // request that happened to be reading it.
  retired_.swap(v);
}

int DeviceSlotsPerGpu(int allocatable_gpus, std::size_t gpus) {
  if (allocatable_gpus < 0 || gpus == 0) return -1;
  // Uneven counts (a GPU lost, a partial time-slicing config): the fewer slots,
  // so that no GPU is promised more than the device plugin can give.
  return allocatable_gpus / static_cast<int>(gpus);
}

namespace {
void ApplyInfo(const NodeInfo& info, NodeState* n) {
  n->labels = info.labels;
  n->allocatable_gpus = info.allocatable_gpus;
  n->gpus_requested = info.gpus_requested;
  n->cpu_milli_allocatable = info.cpu_milli_allocatable;
  n->memory_allocatable = info.memory_allocatable;
  const int slots = DeviceSlotsPerGpu(info.allocatable_gpus, n->gpus.size());
  if (slots < 0) return;
  for (Gpu& g : n->gpus) {
    const int held = g.index >= 0 && g.index < kMaxGpusPerNode ? info.pods_on_gpu[g.index] : 0;
    g.SetFreeSlots(std::max(0, slots - held));
  }
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

void NodeCatalog::Put(const std::string& name, NodeInfo info,
                      const std::function<void(std::uint64_t)>& then) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = infos_[name];
  if (!(slot == info)) {
    slot = std::move(info);
    generation_.fetch_add(1);
  }
  if (then) then(generation_.load());
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

std::unordered_map<std::string, NodeInfo> NodeCatalog::Copy(std::uint64_t* generation) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation) *generation = generation_.load();
  return infos_;
}

}  // namespace tidal::extender
