#include "tidal/core/types.h"

#include <algorithm>

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

void NodeState::Finalize() {
  Bytes used = 0, total = 0;
  double util_sum = 0;
  gpu_free.clear();
  max_gpu_free = 0;
  std::fill(std::begin(nvlink_adjacency), std::end(nvlink_adjacency), 0);
  max_nvlink_links = 0;
  has_nvlink_peers = false;
  for (const Gpu& g : gpus) {
    // Before the index check below: every peer entry counts, as the scorer always read them.
    for (const auto& p : g.nvlink_peers) max_nvlink_links = std::max(max_nvlink_links, p.links);
    has_nvlink_peers = has_nvlink_peers || !g.nvlink_peers.empty();
    used += g.memory_used;
    total += g.memory_total;
    util_sum += g.nvlink_utilization;
    gpu_free.push_back(g.free_slots == 0 ? Bytes{-1} : g.memory_free());
    max_gpu_free = std::max(max_gpu_free, gpu_free.back());
    if (g.index < 0 || g.index >= kMaxGpusPerNode) continue;
    for (const auto& p : g.nvlink_peers)
      if (p.links > 0 && p.peer >= 0 && p.peer < kMaxGpusPerNode)
        nvlink_adjacency[g.index] |= std::uint64_t{1} << p.peer;
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
  inline_gpus = 0;
  uniform_nvlink_links = -1;
  const std::size_t n = gpus.size();
  if (n == 0 || n > kInlineGpus) return;
  std::uint64_t seen = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const int index = gpus[p].index;
    if (index < 0 || index >= kMaxGpusPerNode) return;
    const std::uint64_t bit = std::uint64_t{1} << index;
    if (seen & bit) return;
    seen |= bit;
    gpu_index[p] = static_cast<std::int8_t>(index);
  }
  // Insertion sort by (free, index): at most kInlineGpus elements.
  for (std::size_t p = 0; p < n; ++p) {
    std::size_t q = p;
    const auto before = [&](std::size_t a, std::size_t b) {
      return gpu_free[a] != gpu_free[b] ? gpu_free[a] < gpu_free[b] : gpu_index[a] < gpu_index[b];
    };
    for (; q > 0 && before(p, positions_by_free[q - 1]); --q)
      positions_by_free[q] = positions_by_free[q - 1];
    positions_by_free[q] = static_cast<std::uint8_t>(p);
  }
  for (std::size_t s = 0; s < n; ++s) {
    free_by_rank[s] = gpu_free[positions_by_free[s]];
    index_by_rank[s] = gpu_index[positions_by_free[s]];
  }
  inline_gpus = static_cast<std::uint8_t>(n);
  if (!has_nvlink_peers || n < 2) {
    uniform_nvlink_links = 0;
    return;
  }
  // The placer reads a pair's links from one GPU's first entry for the other:
  // uniform when every ordered pair reads the same.
  int links = -1;
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t q = 0; q < n; ++q) {
      if (p == q) continue;
      const int l = gpus[p].LinksTo(gpu_index[q]);
      if (links == -1) links = l;
      if (l != links || l < 0) return;
    }
  }
  uniform_nvlink_links = links;
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
