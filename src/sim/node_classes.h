#pragma once
// Which nodes of a trace experiment no plugin can tell apart. Every node view is
// made by TraceNodeView from a row's CPU, memory, GPU count and model, and then
// changed only by ApplyTracePod (requested CPU, memory and GPUs; each GPU's free
// share, its used memory following from it) and by the placer (the kinds of GPU
// pods). Two views equal in those are equal in every field a plugin reads but the
// name, which only random's GPU draw reads: scored for the same pod, they give the
// same verdict, score and GPUs. The indexed FGD placer scores one node per class
// (fgd_experiment.cc); a plain scan of every node is its test oracle.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tidal/core/types.h"

namespace tidal::sim {

class TraceNodeClasses {
 public:
  explicit TraceNodeClasses(std::span<const NodeState> nodes);
  // Node `n` (its index in the span given at construction) is now `node`.
  void Update(std::size_t n, const NodeState& node);
  std::uint32_t Of(std::size_t n) const { return class_of_[n]; }
  // Every class id is below it; at most the number of nodes (a class no node is
  // in any more gives its id to the next new one).
  std::size_t Count() const { return keys_.size(); }

 private:
  struct Key {
    std::uint32_t type = 0;  // the row's CPU, memory, GPUs and model
    int gpus_requested = 0;
    std::int64_t cpu_milli_requested = 0;
    Bytes memory_requested = 0;
    std::uint64_t gpu_pod_kinds = 0;
    std::array<int, kInlineGpus> milli_free = {};
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  using Type = std::tuple<std::int64_t, Bytes, int, std::size_t, std::string, bool>;
  std::uint32_t TypeOf(const NodeState& node);
  Key KeyOf(std::size_t n, const NodeState& node) const;
  std::uint32_t Join(const Key& key);
  void Leave(std::uint32_t id);

  std::map<Type, std::uint32_t> types_;
  std::uint32_t next_type_ = 0;
  std::vector<std::uint32_t> type_of_;                   // per node
  std::unordered_map<Key, std::uint32_t, KeyHash> ids_;  // the classes with nodes in them
  std::vector<Key> keys_;                                // per class id
  std::vector<std::uint32_t> members_;                   // per class id
  std::vector<std::uint32_t> free_ids_;
  std::vector<std::uint32_t> class_of_;  // per node
};

}  // namespace tidal::sim
