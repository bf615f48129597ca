#include "tidal/core/types.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tidal {

std::vector<int> GpuSet::Indices() const {
  std::vector<int> out;
  for (std::uint64_t b = bits_; b != 0; b &= b - 1) out.push_back(std::countr_zero(b));
  return out;
}

int Gpu::LinksTo(int peer) const {
  for (const auto& p : nvlink_peers)
    if (p.peer == peer) return p.links;
  return 0;
}

namespace {
constexpr std::size_t kLine = 64;
// Whether [offset, offset + size) is within cache line `line` of a NodeState.
constexpr bool InLine(std::size_t offset, std::size_t size, std::size_t line) {
  return offset >= line * kLine && offset + size <= (line + 1) * kLine;
}
}  // namespace

// The request path's layout: the fields each line is for stay in it.
struct NodeStateLayout {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"  // NodeState is not standard-layout
  static_assert(alignof(NodeState) == kLine);
  // A node rejected on load reads the first line alone.
  static_assert(InLine(offsetof(NodeState, load), sizeof(LoadVector), 0));
  static_assert(InLine(offsetof(NodeState, metrics_known), 1, 0));
  static_assert(InLine(offsetof(NodeState, has_load_trend), 1, 0));
  static_assert(InLine(offsetof(NodeState, max_gpu_free_), sizeof(Bytes), 0));
  static_assert(InLine(offsetof(NodeState, inline_gpus_), 1, 0));
  static_assert(InLine(offsetof(NodeState, uniform_nvlink_links_), sizeof(int), 0));
  static_assert(InLine(offsetof(NodeState, index_by_rank_), kInlineGpus, 0));
  // A 1-GPU pod's GPU is chosen with the second.
  static_assert(InLine(offsetof(NodeState, free_by_rank_), kInlineGpus * sizeof(Bytes), 1));
  // Multi-GPU placement and rarer cases: the third.
  static_assert(InLine(offsetof(NodeState, max_nvlink_links_), sizeof(int), 2));
  static_assert(InLine(offsetof(NodeState, allocatable_gpus), sizeof(int), 2));
  static_assert(InLine(offsetof(NodeState, positions_by_free_), kInlineGpus, 2));
  static_assert(InLine(offsetof(NodeState, gpu_index_), kInlineGpus, 2));
  static_assert(InLine(offsetof(NodeState, milli_free_), kInlineGpus * sizeof(std::int16_t), 2));
#pragma GCC diagnostic pop
};

void NodeState::Finalize() {
  Bytes used = 0, total = 0;
  double util_sum = 0;
  gpu_free_.clear();
  max_gpu_free_ = 0;
  std::fill(std::begin(nvlink_adjacency_), std::end(nvlink_adjacency_), 0);
  max_nvlink_links_ = 0;
  has_nvlink_peers_ = false;
  for (const Gpu& g : gpus) {
    // Before the index check below: every peer entry counts, as the scorer always read them.
    for (const auto& p : g.nvlink_peers) max_nvlink_links_ = std::max(max_nvlink_links_, p.links);
    has_nvlink_peers_ = has_nvlink_peers_ || !g.nvlink_peers.empty();
    used += g.memory_used;
    total += g.memory_total;
    util_sum += g.nvlink_utilization;
    gpu_free_.push_back(g.free_slots == 0 ? Bytes{-1} : g.memory_free());
    max_gpu_free_ = std::max(max_gpu_free_, gpu_free_.back());
    if (g.index < 0 || g.index >= kMaxGpusPerNode) continue;
    for (const auto& p : g.nvlink_peers)
      if (p.links > 0 && p.peer >= 0 && p.peer < kMaxGpusPerNode)
        nvlink_adjacency_[g.index] |= std::uint64_t{1} << p.peer;
  }
  gpu_memory_used = used;
  gpu_memory_total = total;
  load.gpu_memory = total > 0 ? static_cast<double>(used) / static_cast<double>(total) : 0;
  const double util_mean = gpus.empty() ? 0 : util_sum / static_cast<double>(gpus.size());
  load.nvlink = std::max(nvlink_competition, util_mean);
  load.await_ms = storage_await_ms;
  FinalizeInlineGpus();
}

void NodeState::FinalizeInlineGpus() {
  inline_gpus_ = 0;
  uniform_nvlink_links_ = -1;
  const std::size_t n = gpus.size();
  if (n == 0 || n > kInlineGpus) return;
  std::uint64_t seen = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const int index = gpus[p].index;
    if (index < 0 || index >= kMaxGpusPerNode) return;
    const std::uint64_t bit = std::uint64_t{1} << index;
    if (seen & bit) return;
    seen |= bit;
    gpu_index_[p] = static_cast<std::int8_t>(index);
    const int milli = gpus[p].milli_free;
    if (milli < INT16_MIN || milli > INT16_MAX) return;  // not a share: read the GPUs
    milli_free_[p] = static_cast<std::int16_t>(milli);
  }
  // Insertion sort by (free, index): at most kInlineGpus elements.
  for (std::size_t p = 0; p < n; ++p) {
    std::size_t q = p;
    const auto before = [&](std::size_t a, std::size_t b) {
      return gpu_free_[a] != gpu_free_[b] ? gpu_free_[a] < gpu_free_[b]
                                          : gpu_index_[a] < gpu_index_[b];
    };
    for (; q > 0 && before(p, positions_by_free_[q - 1]); --q)
      positions_by_free_[q] = positions_by_free_[q - 1];
    positions_by_free_[q] = static_cast<std::uint8_t>(p);
  }
  for (std::size_t s = 0; s < n; ++s) {
    free_by_rank_[s] = gpu_free_[positions_by_free_[s]];
    index_by_rank_[s] = gpu_index_[positions_by_free_[s]];
  }
  inline_gpus_ = static_cast<std::uint8_t>(n);
  if (!has_nvlink_peers_ || n < 2) {
    uniform_nvlink_links_ = 0;
    return;
  }
  // The placer reads a pair's links from one GPU's first entry for the other:
  // uniform when every ordered pair reads the same.
  int links = -1;
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t q = 0; q < n; ++q) {
      if (p == q) continue;
      const int l = gpus[p].LinksTo(gpu_index_[q]);
      if (links == -1) links = l;
      if (l != links || l < 0) return;
    }
  }
  uniform_nvlink_links_ = links;
}

std::optional<LoadType> ParseLoadType(const std::string& text) {
  if (text.empty()) return LoadType::kUnspecified;
  if (text == "GPU_HEAVY") return LoadType::kGpuHeavy;
  if (text == "IO_HEAVY") return LoadType::kIoHeavy;
  if (text == "NVLINK_HEAVY") return LoadType::kNvlinkHeavy;
  if (text == "INFERENCE") return LoadType::kInference;
  return std::nullopt;
}

const char* LoadTypeName(LoadType t) {
  switch (t) {
    case LoadType::kGpuHeavy:
      return "GPU_HEAVY";
    case LoadType::kIoHeavy:
      return "IO_HEAVY";
    case LoadType::kNvlinkHeavy:
      return "NVLINK_HEAVY";
    case LoadType::kInference:
      return "INFERENCE";
    case LoadType::kUnspecified:
      break;
  }
  return "";
}

}  // namespace tidal
