#include "sim/node_classes.h"

#include <algorithm>

namespace tidal::sim {

TraceNodeClasses::TraceNodeClasses(std::span<const NodeState> nodes) {
  type_of_.reserve(nodes.size());
  class_of_.reserve(nodes.size());
  for (const NodeState& node : nodes) type_of_.push_back(TypeOf(node));
  ids_.reserve(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) class_of_.push_back(Join(KeyOf(n, nodes[n])));
}

void TraceNodeClasses::Update(std::size_t n, const NodeState& node) {
  const std::uint32_t was = class_of_[n];
  class_of_[n] = Join(KeyOf(n, node));
  Leave(was);
}

// A node with more GPUs than the key holds is a type of its own: in no class but its own.
std::uint32_t TraceNodeClasses::TypeOf(const NodeState& node) {
  if (node.gpus.size() > kInlineGpus) return next_type_++;
  const Type type{node.cpu_milli_allocatable,
                  node.memory_allocatable,
                  node.allocatable_gpus,
                  node.gpus.size(),
                  node.gpus.empty() ? std::string() : node.gpus[0].model,
                  node.metrics_known};
  const auto [it, fresh] = types_.try_emplace(type, next_type_);
  if (fresh) ++next_type_;
  return it->second;
}

TraceNodeClasses::Key TraceNodeClasses::KeyOf(std::size_t n, const NodeState& node) const {
  Key key;
  key.type = type_of_[n];
  key.gpus_requested = node.gpus_requested;
  key.cpu_milli_requested = node.cpu_milli_requested;
  key.memory_requested = node.memory_requested;
  key.gpu_pod_kinds = node.gpu_pod_kinds;
  int free[kMaxGpusPerNode];
  const std::size_t gpus = std::min(node.MilliFree(free), kInlineGpus);
  std::copy(free, free + gpus, key.milli_free.begin());
  return key;
}

std::uint32_t TraceNodeClasses::Join(const Key& key) {
  const auto [it, fresh] = ids_.try_emplace(key, 0);
  if (fresh) {
    if (free_ids_.empty()) {
      it->second = static_cast<std::uint32_t>(keys_.size());
      keys_.push_back(key);
      members_.push_back(0);
    } else {
      it->second = free_ids_.back();
      free_ids_.pop_back();
      keys_[it->second] = key;
    }
  }
  ++members_[it->second];
  return it->second;
}

void TraceNodeClasses::Leave(std::uint32_t id) {
  if (--members_[id] > 0) return;
  ids_.erase(keys_[id]);
  free_ids_.push_back(id);
}

std::size_t TraceNodeClasses::KeyHash::operator()(const Key& k) const {
  // FNV-1a over the fields' values.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  mix(k.type);
  mix(static_cast<std::uint64_t>(k.gpus_requested));
  mix(static_cast<std::uint64_t>(k.cpu_milli_requested));
  mix(static_cast<std::uint64_t>(k.memory_requested));
  mix(k.gpu_pod_kinds);
  for (int f : k.milli_free) mix(static_cast<std::uint64_t>(f));
  return static_cast<std::size_t>(h ^ (h >> 32));
}

}  // namespace tidal::sim
