#pragma once
// The load model's data types, shared by every layer.
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tidal/core/clock.h"

namespace tidal {

using Bytes = std::int64_t;
using Labels = std::map<std::string, std::string>;

inline constexpr int kMaxGpusPerNode = 64;

// A set of GPU indices on one node, as a bitmask (index < kMaxGpusPerNode).
class GpuSet {
 public:
  constexpr GpuSet() = default;
  constexpr explicit GpuSet(std::uint64_t bits) : bits_(bits) {}
  void Add(int index) { bits_ |= (std::uint64_t{1} << index); }
  bool Has(int index) const { return (bits_ >> index) & 1U; }
  int Count() const { return std::popcount(bits_); }
  bool Empty() const { return bits_ == 0; }
  std::uint64_t bits() const { return bits_; }
  std::vector<int> Indices() const;
  friend bool operator==(GpuSet a, GpuSet b) { return a.bits_ == b.bits_; }

 private:
  std::uint64_t bits_ = 0;
};

struct NvlinkPeer {
  int peer = 0;   // the other GPU's index on the same node
  int links = 0;  // number of NVLink links between the two
  friend bool operator==(const NvlinkPeer&, const NvlinkPeer&) = default;
};

struct Gpu {
  int index = 0;
  std::string uuid;
  std::string model;
  Bytes memory_total = 0;
  Bytes memory_used = 0;
  double nvlink_utilization = 0;  // measured, 0..1
  // Device-plugin slots (time-slicing replicas) still free on this GPU; -1: not
  // tracked. A GPU with none left cannot be chosen whatever its memory.
  int free_slots = -1;
  std::vector<NvlinkPeer> nvlink_peers;
  // Requested share still free, in milli-GPU (1000: the whole GPU), for clusters
  // that share GPUs by request as the openb trace does.
  int milli_free = 1000;

  Bytes memory_free() const { return memory_total > memory_used ? memory_total - memory_used : 0; }
  // Sets free_slots and, where GPUs are shared by device slots (time-slicing)
  // rather than by request, the share the fragmentation measure reads: each pod
  // takes one slot of each of its GPUs, so a GPU with a slot left is a whole
  // free GPU to the next pod and one with none is wholly allocated.
  void SetFreeSlots(int slots) {
    free_slots = slots;
    milli_free = slots == 0 ? 0 : 1000;
  }
  int LinksTo(int peer) const;
};

// The three load dimensions (docs/design.md#load-model).
struct LoadVector {
  double gpu_memory = 0;  // Σused / Σtotal, 0..1
  double nvlink = 0;      // max(competition index, mean measured utilisation)
  double await_ms = 0;    // storage await
};

// A vector that keeps up to N elements inside its owner (no allocation of its own,
// the owner's cache lines) and moves them to the heap beyond N.
template <class T, std::size_t N>
class InlineVector {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return size_ <= N ? inline_.data() : heap_.data(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  const T& back() const { return data()[size_ - 1]; }
  void clear() {
    size_ = 0;
    heap_.clear();
  }
  void push_back(const T& value) {
    if (size_ < N) {
      inline_[size_++] = value;
      return;
    }
    if (size_ == N) heap_.assign(inline_.begin(), inline_.end());
    heap_.push_back(value);
    ++size_;
  }
  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::size_t size_ = 0;  // first: data() reads it with the inline elements
  std::array<T, N> inline_{};
  std::vector<T> heap_;
};

// Nodes with at most this many GPUs keep their per-GPU placement data inline.
inline constexpr std::size_t kInlineGpus = 8;

// A node as the policy sees it: its GPUs, loads, labels and what the API server
// says it can hold, and, derived from its GPUs by Finalize() and read-only to
// everyone else, the placement index the GPU plugins read (the GPUs ranked by
// free memory, their NVLink links).
//
// Laid out for the request path (types.cc asserts it): what a filter and score
// read for every node comes first, so that a request touches the first cache
// lines of each node and nothing behind a pointer (at 5 000 nodes the rest does
// not stay in cache). The first line (64 bytes: the struct is aligned to one) is
// all a node rejected on load costs; with the second, a GPU is chosen for a
// 1-GPU pod; the third holds what multi-GPU placement and rarer cases read.
struct alignas(64) NodeState {
  // -- first line.
  // The three loads, derived from the GPUs and series by Finalize(); reservations
  // and the simulator add to them after.
  LoadVector load;
  Bytes max_gpu_free() const { return max_gpu_free_; }  // -1 when no GPU has a slot
  Bytes gpu_memory_used = 0;   // Σ over GPUs (Finalize(), then reservations)
  Bytes gpu_memory_total = 0;  // Σ over GPUs (Finalize())

 private:
  Bytes max_gpu_free_ = 0;
  int uniform_nvlink_links_ = -1;
  bool has_nvlink_peers_ = false;
  std::uint8_t inline_gpus_ = 0;

 public:
  bool metrics_known = true;  // false: the node's own series are missing or old
  bool has_load_trend = false;

 private:
  std::int8_t index_by_rank_[kInlineGpus] = {};
  // -- second line.
  Bytes free_by_rank_[kInlineGpus] = {};
  // -- third line.
  int max_nvlink_links_ = 0;

 public:
  int allocatable_gpus = -1;  // -1: unknown (taken as the number of GPUs)

 private:
  std::uint8_t positions_by_free_[kInlineGpus] = {};
  std::int8_t gpu_index_[kInlineGpus] = {};
  std::int16_t milli_free_[kInlineGpus] = {};  // gpus[p].milli_free, inline GPUs only

 public:
  // Where `load` is expected to go by request time + horizon (forecast − last
  // sample), set by the extender or simulator when loadForecast is on. Kept as a
  // change so that reservations added to `load` still count.
  LoadVector load_trend;

 private:
  InlineVector<Bytes, kInlineGpus> gpu_free_;

 public:
  // -- the rest: what a node is, read once per request or less.
  std::string name;
  Labels labels;
  std::vector<Gpu> gpus;
  double storage_await_ms = 0;
  double nvlink_competition = 0;
  TimeMs sample_time_ms = 0;
  // What the API server knows (requests, not usage): for kube-scheduler's own
  // resource fit and scoring, and for the fallback's remaining allocatable GPUs.
  std::int64_t cpu_milli_allocatable = 0;
  std::int64_t cpu_milli_requested = 0;
  Bytes memory_allocatable = 0;
  Bytes memory_requested = 0;
  int gpus_requested = 0;  // advertised nvidia.com/gpu units already requested
  // Kinds of GPU pods running here, for GPU-clustering scores: bit 0 a pod sharing
  // a GPU, bit n (1..63) a pod of n whole GPUs.
  std::uint64_t gpu_pod_kinds = 0;

  // Rebuilds the loads' GPU parts and the placement index from `gpus`,
  // `storage_await_ms` and `nvlink_competition`: call after changing them.
  void Finalize();

  int AllocatableGpus() const {
    return allocatable_gpus >= 0 ? allocatable_gpus : static_cast<int>(gpus.size());
  }

  // ---- The placement index (Finalize()) ----
  // Free memory per GPU, by position in `gpus`; -1 for a GPU with no free slot.
  const InlineVector<Bytes, kInlineGpus>& gpu_free() const { return gpu_free_; }
  // Bit j set: GPU index i and GPU index j are linked (indices below kMaxGpusPerNode).
  std::uint64_t nvlink_adjacency(int gpu_index) const { return nvlink_adjacency_[gpu_index]; }
  int max_nvlink_links() const { return max_nvlink_links_; }   // over every peer entry, ≥ 0
  bool has_nvlink_peers() const { return has_nvlink_peers_; }  // some GPU lists a peer
  // For at most kInlineGpus GPUs with distinct indices in [0, kMaxGpusPerNode):
  // their number, else 0 (and the ranked accessors below are not to be read).
  int inline_gpus() const { return inline_gpus_; }
  // The GPUs by rank: increasing free memory, lower index first on ties; for
  // rank r < inline_gpus(), its GPU index, free memory and position in `gpus`.
  int index_by_rank(int rank) const { return index_by_rank_[rank]; }
  Bytes free_by_rank(int rank) const { return free_by_rank_[rank]; }
  int position_by_rank(int rank) const { return positions_by_free_[rank]; }
  // The GPU index at position p of `gpus` (p < inline_gpus()).
  int gpu_index_at(int position) const { return gpu_index_[position]; }
  // The link count of every pair of GPUs as the placer reads it (the first peer
  // entry of the GPU later in `gpus`, 0 without one) when every pair has the
  // same, as on NVSwitch nodes (0: no peer entry at all); -1 otherwise or when
  // inline_gpus() is 0.
  int uniform_nvlink_links() const { return uniform_nvlink_links_; }
  // Each GPU's free milli-GPU share, in `gpus` order, into `free` (room for
  // kMaxGpusPerNode, the most it writes); returns how many. With the GPUs inline,
  // Finalize()'s copy: placing a shared-GPU pod then reads the node state alone,
  // not the GPU vector.
  std::size_t MilliFree(int* free) const {
    const std::size_t n = std::min(gpus.size(), static_cast<std::size_t>(kMaxGpusPerNode));
    if (inline_gpus_ == n)
      for (std::size_t p = 0; p < n; ++p) free[p] = milli_free_[p];
    else
      for (std::size_t p = 0; p < n; ++p) free[p] = gpus[p].milli_free;
    return n;
  }

 private:
  void FinalizeInlineGpus();
  friend struct NodeStateLayout;  // types.cc's layout checks
  std::uint64_t nvlink_adjacency_[kMaxGpusPerNode] = {};
};

// docs/design.md#nvlink: NVLink-using pods on the node / (GPUs × slots per GPU).
inline double NvlinkCompetitionIndex(int nvlink_pods, int gpus, int slots_per_gpu) {
  return gpus > 0 && slots_per_gpu > 0 ? static_cast<double>(nvlink_pods) / (gpus * slots_per_gpu)
                                       : 0;
}

// docs/design.md#storage: node IO load L_io = min(1, await / 30 ms).
inline double StorageIoLoad(double await_ms) {
  return await_ms <= 0 ? 0 : (await_ms >= 30 ? 1 : await_ms / 30);
}

enum class LoadType { kUnspecified, kGpuHeavy, kIoHeavy, kNvlinkHeavy, kInference };
std::optional<LoadType> ParseLoadType(const std::string& text);
const char* LoadTypeName(LoadType t);

// What a pod asks for, decoded from its Kubernetes object.
struct PodDemand {
  std::string namespace_name = "default";
  std::string name;
  std::string uid;
  int gpu_count = 0;
  // Effective requests as kube-scheduler counts them: max(Σ containers, max init container),
  // a container's request defaulting to its limit.
  std::int64_t cpu_milli = 0;
  Bytes memory_request = 0;
  Bytes gpu_memory_per_gpu = 0;  // 0: not declared, estimated by the policy
  bool gpu_memory_declared = false;
  Bytes model_size = 0;  // ai.model-size: parameter memory, 0 when absent
  bool nvlink_required = false;
  bool nvlink_auto = false;  // ai.auto-nvlink: "true"
  LoadType load_type = LoadType::kUnspecified;
  std::vector<std::string> images;
  Labels labels;
  Labels annotations;
  std::optional<double> gpu_reject_threshold;  // ai.gpu-reject-threshold, validated in 0..1
  // Set when the pod object itself is malformed (bad annotation, quantity): the pod is
  // unresolvable on every node and the reason names the field.
  std::string invalid_reason;

  // Share of each GPU in milli-GPU (1000: whole GPUs); below 1000 only for 1-GPU pods.
  int gpu_milli = 1000;
  std::vector<std::string> gpu_models;  // GPU models the pod accepts; empty: any

  std::string Key() const { return namespace_name + "/" + name; }
};

}  // namespace tidal
