#include "policy/plugins/gpufit/gpufit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include "tidal/core/quantity.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {
namespace {

struct Candidate {
  int index;  // GPU index on the node
  Bytes free;
  const Gpu* gpu;
};

// The GPUs of one node with enough free memory, and the link count of every pair,
// gathered once per ChooseGpus call: the searches then read a table instead of
// rescanning nvlink_peers (Gpu::LinksTo) at every step, and nothing is allocated
// unless a node lists more than kMaxGpusPerNode candidates (only possible with a
// GPU index listed twice).
class Candidates {
 public:
  Candidates(const NodeState& node, Bytes need) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < node.gpus.size(); ++i)
      n += node.gpu_free[i] >= need && node.gpus[i].index >= 0 &&
           node.gpus[i].index < kMaxGpusPerNode;
    rows_ = inline_.data();
    if (n > inline_.size()) {
      heap_.resize(n);
      rows_ = heap_.data();
    }
    // Candidate GPU indices, and each one's column in Row::links.
    std::uint64_t mask = 0;
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      const Gpu& g = node.gpus[i];
      if (node.gpu_free[i] >= need && g.index >= 0 && g.index < kMaxGpusPerNode) {
        rows_[size_++].c = {g.index, node.gpu_free[i], &g};
        mask |= std::uint64_t{1} << g.index;
      }
    }
    int columns = 0;
    for (std::uint64_t b = mask; b != 0; b &= b - 1) column_[std::countr_zero(b)] = columns++;
    for (std::size_t i = 0; i < size_; ++i) {
      Row& r = rows_[i];
      std::fill(r.links, r.links + columns, 0);
      r.linked = node.nvlink_adjacency[r.c.index];
      r.positive = 0;
      std::uint64_t seen = 0;  // LinksTo returns the first entry for a peer
      for (const NvlinkPeer& p : r.c.gpu->nvlink_peers) {
        if (p.peer < 0 || p.peer >= kMaxGpusPerNode) continue;
        const std::uint64_t bit = std::uint64_t{1} << p.peer;
        if (!(mask & bit) || (seen & bit)) continue;
        seen |= bit;
        r.links[column_[p.peer]] = p.links;
        if (p.links != 0) r.linked |= bit;
        if (p.links > 0) r.positive |= bit;
      }
    }
  }

  std::size_t size() const { return size_; }
  const Candidate& operator[](std::size_t i) const { return rows_[i].c; }
  // c[i].gpu->LinksTo(gpu), `gpu` being a candidate's GPU index.
  int Links(std::size_t i, int gpu) const { return rows_[i].links[column_[gpu]]; }
  // Σ Links(i, g) over the GPUs g of `bits`.
  int LinksToSet(std::size_t i, std::uint64_t bits) const {
    int sum = 0;
    for (std::uint64_t b = bits; b != 0; b &= b - 1) sum += Links(i, std::countr_zero(b));
    return sum;
  }
  // Candidate GPUs linked to c[i] by a peer entry with links != 0 or by the
  // node's adjacency (the clique search's test).
  std::uint64_t Linked(std::size_t i) const { return rows_[i].linked; }
  // Candidate GPUs with Links(i, g) > 0 (the greedy's test).
  std::uint64_t Positive(std::size_t i) const { return rows_[i].positive; }

 private:
  struct Row {
    Candidate c;
    std::uint64_t linked;
    std::uint64_t positive;
    int links[kMaxGpusPerNode];  // by column_ of the other GPU
  };
  // Left uninitialised (about 19 KiB): only the first size_ rows and the first
  // `columns` links of each are written and read.
  std::array<Row, kMaxGpusPerNode> inline_;
  std::vector<Row> heap_;
  Row* rows_ = nullptr;
  std::size_t size_ = 0;
  int column_[kMaxGpusPerNode];
};

// Better: more links, then less slack, then the smaller bitmask (the set whose
// highest GPU index is lowest): deterministic whatever the search order.
bool Better(int links, Bytes slack, std::uint64_t bits, const GpuChoice& best, bool have) {
  if (!have) return true;
  if (links != best.links) return links > best.links;
  if (slack != best.slack) return slack < best.slack;
  return bits < best.gpus.bits();
}

class CliqueSearch {
 public:
  CliqueSearch(const Candidates& c, int k, Bytes need, bool require, bool prefer)
      : c_(c), k_(k), need_(need), require_(require), prefer_(prefer) {}

  void Run(GpuChoice* best, bool* have) {
    best_ = best;
    have_ = have;
    Recurse(0, 0, 0, 0, 0);
  }

 private:
  void Recurse(std::size_t from, int depth, std::uint64_t bits, int links, Bytes slack) {
    if (depth == k_) {
      if (Better(prefer_ ? links : 0, slack, bits, *best_, *have_)) {
        best_->gpus = GpuSet(bits);
        best_->links = links;
        best_->slack = slack;
        *have_ = true;
      }
      return;
    }
    for (std::size_t i = from; i + static_cast<std::size_t>(k_ - depth) <= c_.size(); ++i) {
      // Linked to every GPU chosen so far.
      if (require_ && (bits & ~c_.Linked(i)) != 0) continue;
      Recurse(i + 1, depth + 1, bits | (std::uint64_t{1} << c_[i].index),
              links + c_.LinksToSet(i, bits), slack + (c_[i].free - need_));
    }
  }

  const Candidates& c_;
  int k_;
  Bytes need_;
  bool require_, prefer_;
  GpuChoice* best_ = nullptr;
  bool* have_ = nullptr;
};

// Greedy for large nodes: seed with each candidate, extend by the GPU that adds
// the most links (then the tightest fit).
void Greedy(const Candidates& c, int k, Bytes need, bool require, bool prefer, GpuChoice* best,
            bool* have) {
  std::vector<char> used(c.size(), 0);
  for (std::size_t seed = 0; seed < c.size(); ++seed) {
    std::uint64_t bits = std::uint64_t{1} << c[seed].index;
    std::fill(used.begin(), used.end(), 0);
    used[seed] = 1;
    int links = 0;
    Bytes slack = c[seed].free - need;
    bool ok = true;
    for (int depth = 1; depth < k && ok; ++depth) {
      int pick = -1, pick_links = -1;
      Bytes pick_slack = 0;
      for (std::size_t i = 0; i < c.size(); ++i) {
        if (used[i]) continue;
        if (require && (bits & ~c.Positive(i)) != 0) continue;
        const int score = prefer ? c.LinksToSet(i, bits) : 0;
        const Bytes s = c[i].free - need;
        if (score > pick_links || (score == pick_links && s < pick_slack)) {
          pick = static_cast<int>(i);
          pick_links = score;
          pick_slack = s;
        }
      }
      if (pick < 0) {
        ok = false;
        break;
      }
      used[pick] = 1;
      bits |= std::uint64_t{1} << c[pick].index;
      links += pick_links;
      slack += pick_slack;
    }
    if (ok && Better(links, slack, bits, *best, *have)) {
      best->gpus = GpuSet(bits);
      best->links = links;
      best->slack = slack;
      *have = true;
    }
  }
}

}  // namespace

bool ChooseGpus(const NodeState& node, int count, Bytes need, bool require_nvlink,
                bool prefer_links, int exhaustive_limit, GpuChoice* out) {
  *out = GpuChoice{};
  if (count <= 0) return true;
  if (count == 1) {
    // Fast path: the tightest single fit, lowest index on ties.
    int best = -1;
    Bytes best_free = 0;
    for (std::size_t i = 0; i < node.gpu_free.size(); ++i) {
      const Bytes f = node.gpu_free[i];
      if (f >= need && (best < 0 || f < best_free)) {
        best = static_cast<int>(i);
        best_free = f;
      }
    }
    if (best < 0) return false;
    out->gpus.Add(node.gpus[best].index);
    out->slack = best_free - need;
    return true;
  }
  const Candidates c(node, need);
  if (static_cast<int>(c.size()) < count) return false;
  bool have = false;
  if (static_cast<int>(c.size()) <= exhaustive_limit) {
    CliqueSearch(c, count, need, require_nvlink, prefer_links).Run(out, &have);
  } else {
    Greedy(c, count, need, require_nvlink, prefer_links, out, &have);
  }
  return have;
}

Status GpuFit::FilterOne(const CycleState& cycle, const NodeState& node,
                         NodeScratch& scratch) const {
  const int k = cycle.pod->gpu_count;
  if (k <= 0) return Status::Fits();
  if (!node.metrics_known) {
    // No per-GPU view: only the advertised count is known; the device plugin decides.
    if (node.allocatable_gpus >= 0 && node.allocatable_gpus < k)
      return Status::Unresolvable(
          fmt::format("pod needs {} GPUs, node has {}", k, node.allocatable_gpus));
    return Status::Fits();
  }
  if (static_cast<int>(node.gpus.size()) < k)
    return Status::Unresolvable(fmt::format("pod needs {} GPUs, node has {}", k, node.gpus.size()));
  const Bytes need = cycle.memory_need_per_gpu;
  // Only an explicit request makes links a hard constraint; auto-detection prefers them.
  const bool require = cycle.nvlink_required && k >= 2;
  if (require) {
    bool any_link = false;
    for (const auto& g : node.gpus) any_link = any_link || !g.nvlink_peers.empty();
    if (!any_link)
      return Status::Unresolvable(
          fmt::format("pod requires NVLink across {} GPUs, node has none", k));
  }
  GpuChoice choice;
  if (!ChooseGpus(node, k, need, require, args_.prefer_nvlink_for_all || cycle.uses_nvlink,
                  args_.exhaustive_search_limit, &choice)) {
    int fitting = 0;
    for (Bytes f : node.gpu_free) fitting += f >= need ? 1 : 0;
    if (fitting >= k)
      return Status::Unfit(
          fmt::format("no {} NVLink-connected GPUs with {} free each", k, FormatBytes(need)));
    return Status::Unfit(fmt::format("{} of {} GPUs have {} free (largest free {}), pod needs {}",
                                     fitting, node.gpus.size(), FormatBytes(need),
                                     FormatBytes(node.max_gpu_free), k));
  }
  scratch.gpus = choice.gpus;
  scratch.nvlink_links = choice.links;
  scratch.fit_slack = choice.slack;
  scratch.placed = true;
  return Status::Fits();
}

double GpuFit::ScoreOne(const CycleState& cycle, const NodeState& node,
                        const NodeScratch& scratch) const {
  const int k = cycle.pod->gpu_count;
  if (!cycle.uses_nvlink || k < 2 || !scratch.placed) return 100;
  int max_pair = 0;
  for (const auto& g : node.gpus)
    for (const auto& p : g.nvlink_peers) max_pair = std::max(max_pair, p.links);
  if (max_pair == 0) return 0;
  const double pairs = k * (k - 1) / 2.0;
  return std::min(100.0, 100.0 * scratch.nvlink_links / (pairs * max_pair));
}

std::unique_ptr<Plugin> NewGpuFit(const YAML::Node& args, const std::string& path,
                                  ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<GpuFit, GpuFitArgs>(args, path, errors);
}

}  // namespace tidal
