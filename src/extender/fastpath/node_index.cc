#include "extender/fastpath/node_index.h"

#include <cstring>

#include "tidal/core/fast_text.h"

namespace tidal::extender {

// A multiplicative hash of 8-byte words; node names are short ASCII, and the
// table only needs them spread, not secret.
std::uint64_t NodeIndex::Hash(std::string_view name) {
  constexpr std::uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  const std::size_t n = name.size();
  const char* p = name.data();
  const auto mix = [](std::uint64_t h, std::uint64_t w) {
    h = (h ^ w) * kMul;
    return h ^ (h >> 29);
  };
  std::uint64_t h = n * kMul;
  std::uint64_t w = 0;
  if (n >= 8) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::memcpy(&w, p + i, 8);
      h = mix(h, w);
    }
    // The last 8 bytes, overlapping: fixed-size loads only (the length is mixed in).
    if (i < n) {
      std::memcpy(&w, p + n - 8, 8);
      h = mix(h, w);
    }
  } else if (n >= 4) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    h = mix(h, lo | std::uint64_t{hi} << 32);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      w |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    h = mix(h, w);
  }
  h *= kMul;
  return h ^ (h >> 32);
}

void NodeIndex::Reserve(std::size_t n) {
  std::size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;  // at most half full: short probes
  slots_.resize(capacity);
  mask_ = capacity - 1;
}

void NodeIndex::Insert(const std::string& name, const NodeState& node) {
  const std::uint64_t h = Hash(name);
  for (std::uint64_t at = h & mask_;; at = (at + 1) & mask_) {
    Entry& s = slots_[at];
    if (!s.node) {
      s.hash = h;
      s.node = &node;
      s.sample_ms = node.metrics_known ? node.sample_time_ms : kNoMetrics;
      s.name_at = static_cast<std::uint32_t>(names_.size());
      s.name_size = static_cast<std::uint32_t>(name.size());
      names_ += name;
      return;
    }
    if (s.hash == h && SameBytes(std::string_view(names_).substr(s.name_at, s.name_size), name))
      return;
  }
}

NodeIndex::NodeIndex(std::shared_ptr<const NodeMap> nodes) : map_(nodes) {
  Reserve(nodes ? nodes->size() : 0);
  if (nodes)
    for (const auto& [name, node] : *nodes) Insert(name, node);
}

NodeIndex::NodeIndex(std::shared_ptr<const ReservedMap> reserved) : map_(reserved) {
  Reserve(reserved ? reserved->size() : 0);
  if (reserved)
    for (const auto& [name, node] : *reserved) Insert(name, *node);
}

const NodeIndex::Entry* NodeIndex::Lookup(std::string_view name, std::uint64_t hash) const {
  for (std::uint64_t at = hash & mask_;; at = (at + 1) & mask_) {
    const Entry& s = slots_[at];
    if (!s.node) return nullptr;
    if (s.hash == hash && SameBytes(std::string_view(names_.data() + s.name_at, s.name_size), name))
      return &s;
  }
}

}  // namespace tidal::extender
