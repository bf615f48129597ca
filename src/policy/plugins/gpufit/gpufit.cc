#include "policy/plugins/gpufit/gpufit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <iterator>
#include <string>
#include <vector>

#include "tidal/core/fast_text.h"
#include "tidal/kubetypes/quantity.h"
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
      n += node.gpu_free()[i] >= need && node.gpus[i].index >= 0 &&
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
      if (node.gpu_free()[i] >= need && g.index >= 0 && g.index < kMaxGpusPerNode) {
        rows_[size_++].c = {g.index, node.gpu_free()[i], &g};
        mask |= std::uint64_t{1} << g.index;
      }
    }
    int columns = 0;
    for (std::uint64_t b = mask; b != 0; b &= b - 1) column_[std::countr_zero(b)] = columns++;
    distinct_ = static_cast<std::size_t>(columns) == size_;
    for (std::size_t i = 0; i < size_; ++i) {
      Row& r = rows_[i];
      std::fill(r.links, r.links + columns, 0);
      r.linked = node.nvlink_adjacency(r.c.index);
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
  // No GPU index is listed twice: a set of candidates is then its bitmask.
  bool DistinctIndices() const { return distinct_; }
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
  bool distinct_ = true;
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

// The same choice as CliqueSearch for prefer_links (the maximum under Better over
// every k-set, a strict order on distinct sets), found by branch and bound: the
// candidates are visited by increasing free memory, and a branch is cut when even
// its best case (every pair still to add with `max_links`, the tightest candidates
// left) cannot beat the best set so far. The link count and the clique test of a
// pair are read from the row of the later candidate in node order, as CliqueSearch
// adds them, so every set gets the same count whatever the visiting order. Pairs
// are looked up only on the visited branches: an NVSwitch node visits a few dozen.
// Requires distinct GPU indices (a set is then its bitmask), k <= c.size() <= 32
// and max_links >= 0 and >= every link count of the candidates.
class BoundedCliqueSearch {
 public:
  BoundedCliqueSearch(const Candidates& c, int k, Bytes need, bool require, int max_links)
      : c_(c), m_(static_cast<int>(c.size())), k_(k), require_(require), max_links_(max_links) {
    // Insertion sort, stable (std::stable_sort may allocate).
    for (int p = 0; p < m_; ++p) {
      int q = p;
      for (; q > 0 && c[order_[q - 1]].free > c[p].free; --q) order_[q] = order_[q - 1];
      order_[q] = p;
    }
    prefix_[0] = 0;
    for (int s = 0; s < m_; ++s) {
      slack_[s] = c[order_[s]].free - need;
      prefix_[s + 1] = prefix_[s] + slack_[s];
    }
  }

  void Run(GpuChoice* best, bool* have) {
    best_ = best;
    have_ = have;
    Recurse(0, 0, 0, 0, 0);
  }

 private:
  // Pairs added by choosing `r` more GPUs into a set of `depth`.
  static long PairsToAdd(int depth, int r) {
    return static_cast<long>(r) * depth + static_cast<long>(r) * (r - 1) / 2;
  }

  void Recurse(int from, int depth, std::uint64_t bits, long links, Bytes slack) {
    if (depth == k_) {
      if (Better(static_cast<int>(links), slack, bits, *best_, *have_)) {
        best_->gpus = GpuSet(bits);
        best_->links = static_cast<int>(links);
        best_->slack = slack;
        *have_ = true;
      }
      return;
    }
    const int r = k_ - depth - 1;  // still to choose after this level
    // Links bound for any choice at this level.
    const long links_bound = links + PairsToAdd(depth, k_ - depth) * max_links_;
    for (int s = from; s + (k_ - depth) <= m_; ++s) {
      // The tightest completion: this candidate and the next r by free memory.
      const Bytes slack_bound = slack + prefix_[s + 1 + r] - prefix_[s];
      if (*have_) {
        // Later s only have more slack.
        if (links_bound < best_->links) return;
        if (links_bound == best_->links && slack_bound > best_->slack) return;
      }
      const int p = order_[s];
      long add = 0;
      bool linked = true;
      for (int j = 0; j < depth && linked; ++j) {
        const int q = chosen_[j];
        const std::size_t later = static_cast<std::size_t>(std::max(p, q));
        const int earlier = c_[static_cast<std::size_t>(std::min(p, q))].index;
        // Linked to every GPU chosen so far.
        linked = !require_ || ((c_.Linked(later) >> earlier) & 1U);
        add += c_.Links(later, earlier);
      }
      if (!linked) continue;
      const std::uint64_t next_bits =
          bits | (std::uint64_t{1} << c_[static_cast<std::size_t>(p)].index);
      if (*have_) {
        const long bound = links + add + PairsToAdd(depth + 1, r) * max_links_;
        if (bound < best_->links) continue;
        // Equal at best: a set's bitmask is at least that of its part chosen so far.
        if (bound == best_->links &&
            (slack_bound > best_->slack ||
             (slack_bound == best_->slack && next_bits >= best_->gpus.bits())))
          continue;
      }
      chosen_[depth] = p;
      Recurse(s + 1, depth + 1, next_bits, links + add, slack + slack_[s]);
    }
  }

  static constexpr int kMax = 32;
  const Candidates& c_;
  int m_, k_;
  bool require_;
  long max_links_;
  int order_[kMax];    // candidate positions by increasing free memory (node order on ties)
  Bytes slack_[kMax];  // by visiting order
  Bytes prefix_[kMax + 1];
  int chosen_[kMax];  // candidate positions chosen so far, by depth
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

// Reasons, deferred (Status::Deferred): formatted only when read.
void TooFewGpusReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "pod needs {} GPUs, node has {}", a[0].i, a[1].i);
}
void NoNvlinkReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "pod requires NVLink across {} GPUs, node has none",
                 a[0].i);
}
void NoCliqueReason(const Status::Arg* a, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "no {} NVLink-connected GPUs with {} free each", a[0].i,
                 FormatBytes(a[1].i));
}
// "{} of {} GPUs have {} free (largest free {}), pod needs {}", assembled on the
// stack: the extender formats it for every node rejected this way.
void TooLittleMemoryReason(const Status::Arg* a, std::string* out) {
  const auto bytes = [](std::int64_t v) { return [v](char* p) { return WriteBytes(p, v); }; };
  StackMessage()
      .Integer(a[0].i)
      .Text(" of ")
      .Integer(a[1].i)
      .Text(" GPUs have ")
      .Written(kMaxBytesText, bytes(a[2].i))
      .Text(" free (largest free ")
      .Written(kMaxBytesText, bytes(a[3].i))
      .Text("), pod needs ")
      .Integer(a[4].i)
      .AppendTo(out);
}

// The tightest single fit, lowest index on ties.
bool ChooseOne(const NodeState& node, Bytes need, GpuChoice* out) {
  if (node.inline_gpus() > 0) {
    // The first GPU by (free memory, index) that fits.
    if (node.max_gpu_free() < need) return false;
    for (int s = 0; s < node.inline_gpus(); ++s) {
      if (node.free_by_rank(s) < need) continue;
      out->gpus.Add(node.index_by_rank(s));
      out->slack = node.free_by_rank(s) - need;
      return true;
    }
    return false;
  }
  int best = -1;
  Bytes best_free = 0;
  for (std::size_t i = 0; i < node.gpu_free().size(); ++i) {
    const Bytes f = node.gpu_free()[i];
    if (f >= need && (best < 0 || f < best_free ||
                      (f == best_free && node.gpus[i].index < node.gpus[best].index))) {
      best = static_cast<int>(i);
      best_free = f;
    }
  }
  if (best < 0) return false;
  out->gpus.Add(node.gpus[best].index);
  out->slack = best_free - need;
  return true;
}

// Every pair of GPUs linked alike (NVSwitch), or none linked: every k-set then has
// the same links, so the best set under Better is the k tightest candidates, lower
// index first on equal free memory (the smallest bitmask among the sets of least
// slack). The same choice as the searches below, read off the node's order by free
// memory. Returns false when it does not apply (`*applies` false) or no set fits.
bool ChooseUniform(const NodeState& node, int count, Bytes need, bool require_nvlink,
                   bool prefer_links, int exhaustive_limit, GpuChoice* out, bool* applies) {
  const int links = node.uniform_nvlink_links();
  *applies = node.inline_gpus() > 0 && links >= 0 && (links == 0 ? !require_nvlink : prefer_links);
  if (!*applies) return false;
  const int n = node.inline_gpus();
  int first = 0;  // the first candidate in the order by free memory
  while (first < n && node.free_by_rank(first) < need) ++first;
  const int candidates = n - first;
  // The greedy search, used beyond the limit, breaks ties in another order.
  if (candidates > exhaustive_limit) {
    *applies = false;
    return false;
  }
  if (candidates < count) return false;
  for (int s = first; s < first + count; ++s) {
    out->gpus.Add(node.index_by_rank(s));
    out->slack += node.free_by_rank(s) - need;
  }
  out->links = links * count * (count - 1) / 2;
  return true;
}

// Out of line: its frame holds the candidate table (about 20 KiB), which the
// single-GPU path should not pay for (stack probes on entry).
[[gnu::noinline]] bool ChooseMany(const NodeState& node, int count, Bytes need, bool require_nvlink,
                                  bool prefer_links, int exhaustive_limit, bool bounded,
                                  GpuChoice* out) {
  const Candidates c(node, need);
  if (static_cast<int>(c.size()) < count) return false;
  bool have = false;
  if (static_cast<int>(c.size()) <= exhaustive_limit) {
    if (bounded && prefer_links && c.size() <= 32 && c.DistinctIndices()) {
      BoundedCliqueSearch(c, count, need, require_nvlink, node.max_nvlink_links()).Run(out, &have);
    } else {
      // Without prefer_links, Better compares 0 with the kept set's links: the
      // result depends on the visiting order, which only CliqueSearch keeps.
      CliqueSearch(c, count, need, require_nvlink, prefer_links).Run(out, &have);
    }
  } else {
    Greedy(c, count, need, require_nvlink, prefer_links, out, &have);
  }
  return have;
}

}  // namespace

bool ChooseGpus(const NodeState& node, int count, Bytes need, bool require_nvlink,
                bool prefer_links, int exhaustive_limit, GpuChoice* out) {
  *out = GpuChoice{};
  if (count <= 0) return true;
  if (count == 1) return ChooseOne(node, need, out);
  bool applies = false;
  const bool fits = ChooseUniform(node, count, need, require_nvlink, prefer_links, exhaustive_limit,
                                  out, &applies);
  if (applies) return fits;
  *out = GpuChoice{};
  return ChooseMany(node, count, need, require_nvlink, prefer_links, exhaustive_limit, true, out);
}

bool ChooseGpusExhaustive(const NodeState& node, int count, Bytes need, bool require_nvlink,
                          bool prefer_links, GpuChoice* out) {
  *out = GpuChoice{};
  if (count <= 0) return true;
  if (count == 1) return ChooseOne(node, need, out);
  return ChooseMany(node, count, need, require_nvlink, prefer_links, kMaxGpusPerNode, false, out);
}

Status GpuFit::FilterOne(const CycleState& cycle, const NodeState& node,
                         NodeScratch& scratch) const {
  const int k = cycle.pod->gpu_count;
  if (k <= 0) return Status::Fits();
  if (!node.metrics_known) {
    // No per-GPU view: only the advertised count is known; the device plugin decides.
    if (node.allocatable_gpus >= 0 && node.allocatable_gpus < k)
      return Status::Deferred(Code::kUnresolvable, TooFewGpusReason,
                              {Status::Int(k), Status::Int(node.allocatable_gpus)});
    return Status::Fits();
  }
  // The number of GPUs: inline_gpus (first line) when set, so that a 1-GPU pod
  // reads nothing of the third line, where gpu_free is.
  const std::size_t gpus = node.inline_gpus() > 0 ? node.inline_gpus() : node.gpu_free().size();
  if (static_cast<int>(gpus) < k)
    return Status::Deferred(Code::kUnresolvable, TooFewGpusReason,
                            {Status::Int(k), Status::Int(static_cast<std::int64_t>(gpus))});
  const Bytes need = cycle.memory_need_per_gpu;
  // Only an explicit request makes links a hard constraint; auto-detection prefers them.
  const bool require = cycle.nvlink_required && k >= 2;
  if (require) {
    if (!node.has_nvlink_peers())
      return Status::Deferred(Code::kUnresolvable, NoNvlinkReason, {Status::Int(k)});
  }
  GpuChoice choice;
  if (!ChooseGpus(node, k, need, require, args_.prefer_nvlink_for_all || cycle.uses_nvlink,
                  args_.exhaustive_search_limit, &choice)) {
    int fitting = 0;
    if (node.inline_gpus() > 0) {
      for (int s = 0; s < node.inline_gpus(); ++s) fitting += node.free_by_rank(s) >= need ? 1 : 0;
    } else {
      for (Bytes f : node.gpu_free()) fitting += f >= need ? 1 : 0;
    }
    if (fitting >= k)
      return Status::Deferred(Code::kUnfit, NoCliqueReason, {Status::Int(k), Status::Int(need)});
    return Status::Deferred(Code::kUnfit, TooLittleMemoryReason,
                            {Status::Int(fitting), Status::Int(static_cast<std::int64_t>(gpus)),
                             Status::Int(need), Status::Int(node.max_gpu_free()), Status::Int(k)});
  }
  scratch.gpus = choice.gpus;
  scratch.nvlink_links = choice.links;
  scratch.fit_slack = choice.slack;
  scratch.placed = true;
  return Status::Fits();
}

std::optional<double> GpuFit::UniformScore(const CycleState& cycle) const {
  if (!cycle.uses_nvlink || cycle.pod->gpu_count < 2) return 100.0;
  return std::nullopt;
}

double GpuFit::ScoreOne(const CycleState& cycle, const NodeState& node,
                        const NodeScratch& scratch) const {
  if (const std::optional<double> same = UniformScore(cycle)) return *same;
  if (!scratch.placed) return 100;
  const int k = cycle.pod->gpu_count;
  const int max_pair = node.max_nvlink_links();  // precomputed by NodeState::Finalize
  if (max_pair == 0) return 0;
  const double pairs = k * (k - 1) / 2.0;
  return std::min(100.0, 100.0 * scratch.nvlink_links / (pairs * max_pair));
}

std::unique_ptr<Plugin> NewGpuFit(const YAML::Node& args, const std::string& path,
                                  ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<GpuFit, GpuFitArgs>(args, path, errors);
}

}  // namespace tidal
