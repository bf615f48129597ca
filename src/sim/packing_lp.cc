#include "tidal/sim/packing_lp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "tidal/policy/milli_gpu.h"

namespace tidal::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The share rows, k = 1..6: on the openb lists k up to 10, a row per share over
// half (what fits beside it) or the same rounding per node of CPU, memory or GPUs
// raised the bound no further.
constexpr int kRoundingCuts = 6;
// The GPU fillings listed at most (openb's 20 shares make 1871); past it, the
// rounding rows alone bound how shares pair.
constexpr std::size_t kMaxFillings = 20000;
constexpr std::size_t kMaxShareSizes = 64;    // distinct shares, for the same reason
constexpr std::size_t kTriedPerFilling = 50;  // of those looked at per one listed

struct PodClass {
  std::int64_t cpu_milli = 0;
  Bytes memory = 0;
  int gpus = 0;
  int milli = 0;
  std::vector<std::string> models;
  std::int64_t count = 0;
};

struct NodeType {
  std::int64_t cpu_milli = 0;
  Bytes memory = 0;
  int gpus = 0;
  std::string model;
  std::int64_t count = 0;
};

std::vector<PodClass> Classes(std::span<const PodDemand> pods) {
  using Key = std::tuple<std::int64_t, Bytes, int, int, std::vector<std::string>>;
  std::map<Key, std::int64_t> counts;
  for (const PodDemand& p : pods) {
    if (p.gpu_count <= 0 || p.gpu_milli <= 0) continue;
    std::vector<std::string> models = p.gpu_models;
    std::sort(models.begin(), models.end());
    ++counts[{p.cpu_milli, p.memory_request, p.gpu_count, p.gpu_milli, std::move(models)}];
  }
  std::vector<PodClass> out;
  for (const auto& [k, n] : counts)
    out.push_back(
        {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k), n});
  return out;
}

std::vector<NodeType> Types(std::span<const NodeState> nodes) {
  using Key = std::tuple<std::int64_t, Bytes, int, std::string>;
  std::map<Key, std::int64_t> counts;
  for (const NodeState& n : nodes)
    if (!n.gpus.empty())
      ++counts[{n.cpu_milli_allocatable, n.memory_allocatable, static_cast<int>(n.gpus.size()),
                NodeGpuModel(n)}];
  std::vector<NodeType> out;
  for (const auto& [k, n] : counts)
    out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), n});
  return out;
}

bool Fits(const PodClass& c, const NodeType& t) {
  return c.gpus <= t.gpus && c.milli <= kMilliPerGpu && c.cpu_milli <= t.cpu_milli &&
         c.memory <= t.memory && ModelAccepted(c.models, t.model);
}

// Fekete and Schepers' dual feasible function u_k of one GPU's share (milli):
// the share itself where (k+1)·share is a whole number of GPUs, else
// ⌊(k+1)·share⌋ / k GPUs. Shares that fit one GPU together have values summing to
// at most one GPU, so on every integer placement a node type's pods are worth at
// most its GPUs. k = 1: a share over half is worth a GPU and one under half
// nothing (two over half never share a GPU); k = 4 values a 0.2 share at 0.2 and
// a 0.81 share at a whole GPU (beside it, only shares up to 0.19 fit).
double RoundedShare(int k, int milli) {
  const int scaled = (k + 1) * milli;
  if (scaled % kMilliPerGpu == 0) return static_cast<double>(milli) / kMilliPerGpu;
  return static_cast<double>(scaled / kMilliPerGpu) / k;
}

// The ways to fill one GPU with shares: how many of each of `sizes` (distinct
// milli shares under a GPU) go on it, summing to at most a GPU with no further
// share fitting (a filling with room for one more is worth no more than one
// with it). Empty past `limit` fillings: tiny shares make too many to list.
std::vector<std::vector<int>> GpuFillings(const std::vector<int>& sizes, std::size_t limit) {
  std::vector<std::vector<int>> out;
  if (sizes.size() > kMaxShareSizes) return out;
  std::size_t tried = 0;  // fillings looked at, maximal or not
  std::vector<int> counts(sizes.size(), 0);
  bool over = false;
  // Counts of sizes[i..] for `room` milli left.
  auto fill = [&](auto&& self, std::size_t i, int room) -> void {
    if (over) return;
    if (i == sizes.size()) {
      over = ++tried > kTriedPerFilling * limit;
      if (over) return;
      if (std::any_of(sizes.begin(), sizes.end(), [&](int size) { return size <= room; }))
        return;  // not maximal
      if (out.size() == limit) {
        over = true;
        return;
      }
      out.push_back(counts);
      return;
    }
    for (int k = room / sizes[i]; k >= 0; --k) {
      counts[i] = k;
      self(self, i + 1, room - k * sizes[i]);
    }
    counts[i] = 0;
  };
  fill(fill, 0, kMilliPerGpu);
  if (over) out.clear();
  return out;
}

// One row or the objective: " name: a x + b y ..." over lines of a few terms.
class Row {
 public:
  explicit Row(std::string* out) : out_(out) {}
  void Term(double coefficient, const std::string& var) {
    if (coefficient == 0) return;
    const char* sign = coefficient < 0 ? "-" : "+";
    if (terms_ == 0)
      *out_ += coefficient < 0 ? "- " : "";
    else
      *out_ += fmt::format("{}{} ", terms_ % 6 == 0 ? "\n   " : " ", sign);
    *out_ += fmt::format("{} {}", std::abs(coefficient), var);
    ++terms_;
  }
  int terms() const { return terms_; }

 private:
  std::string* out_;
  int terms_ = 0;
};

// Appends " name: terms <= rhs\n" when the row has a term.
template <class AddTerms>
void Constraint(std::string* lp, const std::string& name, double rhs, AddTerms add) {
  std::string row;
  Row r(&row);
  add(r);
  if (r.terms() == 0) return;
  *lp += fmt::format(" {}: {} <= {}\n", name, row, rhs);
}

// The distinct shares (milli, under a GPU) the classes ask for, ascending.
std::vector<int> ShareSizes(const std::vector<PodClass>& classes) {
  std::vector<int> sizes;
  for (const PodClass& c : classes)
    if (c.milli < kMilliPerGpu) sizes.push_back(c.milli);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Type t's GPUs by filling: y[t][j] GPUs filled as filling j (restricted to the
// shares that fit t), each share's pods at most what the fillings hold, and the
// fillings and whole-GPU pods at most the type's GPUs. Returns the y columns.
std::size_t AddFillingRows(std::string* s, std::size_t t, const NodeType& nt,
                           const std::vector<PodClass>& classes, const std::vector<char>& fits_t,
                           const std::vector<int>& sizes,
                           const std::vector<std::vector<int>>& fillings) {
  std::vector<char> present(sizes.size(), 0);
  for (std::size_t c = 0; c < classes.size(); ++c)
    if (fits_t[c] && classes[c].milli < kMilliPerGpu)
      present[std::lower_bound(sizes.begin(), sizes.end(), classes[c].milli) - sizes.begin()] = 1;
  std::set<std::vector<int>> restricted;
  for (std::vector<int> f : fillings) {
    for (std::size_t m = 0; m < sizes.size(); ++m) f[m] = present[m] ? f[m] : 0;
    if (std::any_of(f.begin(), f.end(), [](int k) { return k > 0; })) restricted.insert(f);
  }
  auto y = [t](std::size_t j) { return fmt::format("y{}_{}", t, j); };
  auto x = [t](std::size_t c) { return fmt::format("x{}_{}", c, t); };
  for (std::size_t m = 0; m < sizes.size(); ++m)
    if (present[m])
      Constraint(s, fmt::format("fill{}_{}", sizes[m], t), 0, [&](Row& r) {
        for (std::size_t c = 0; c < classes.size(); ++c)
          if (fits_t[c] && classes[c].milli == sizes[m]) r.Term(classes[c].gpus, x(c));
        std::size_t j = 0;
        for (const std::vector<int>& f : restricted) r.Term(-f[m], y(j++));
      });
  Constraint(s, fmt::format("gpus{}", t), static_cast<double>(nt.count * nt.gpus), [&](Row& r) {
    for (std::size_t j = 0; j < restricted.size(); ++j) r.Term(1, y(j));
    for (std::size_t c = 0; c < classes.size(); ++c)
      if (fits_t[c] && classes[c].milli >= kMilliPerGpu) r.Term(classes[c].gpus, x(c));
  });
  return restricted.size();
}

}  // namespace

PackingLp BuildPackingLp(std::span<const NodeState> nodes, std::span<const PodDemand> pods) {
  const std::vector<PodClass> classes = Classes(pods);
  const std::vector<NodeType> types = Types(nodes);
  const std::vector<int> sizes = ShareSizes(classes);
  const std::vector<std::vector<int>> fillings = GpuFillings(sizes, kMaxFillings);
  PackingLp lp;
  lp.classes = classes.size();
  lp.node_types = types.size();
  for (const NodeType& t : types) lp.capacity_milli += t.count * t.gpus * kMilliPerGpu;
  std::vector<std::vector<char>> fits(classes.size(), std::vector<char>(types.size(), 0));
  for (std::size_t c = 0; c < classes.size(); ++c)
    for (std::size_t t = 0; t < types.size(); ++t)
      if (Fits(classes[c], types[t])) {
        fits[c][t] = 1;
        ++lp.variables;
      }
  auto var = [](std::size_t c, std::size_t t) { return fmt::format("x{}_{}", c, t); };
  auto gpus_of = [&](std::size_t c) {
    return classes[c].gpus * static_cast<double>(classes[c].milli) / kMilliPerGpu;
  };
  std::string& s = lp.text;
  s += fmt::format(
      "\\ tidal packing LP: {} pod classes, {} node types, {} variables, capacity_milli {}\n",
      lp.classes, lp.node_types, lp.variables, lp.capacity_milli);
  s += "Maximize\n obj: ";
  Row obj(&s);
  for (std::size_t c = 0; c < classes.size(); ++c)
    for (std::size_t t = 0; t < types.size(); ++t)
      if (fits[c][t]) obj.Term(gpus_of(c), var(c, t));
  if (obj.terms() == 0) s += "0 none";  // nothing fits anywhere: the optimum is 0
  s += "\nSubject To\n";
  for (std::size_t c = 0; c < classes.size(); ++c)
    Constraint(&s, fmt::format("pods{}", c), static_cast<double>(classes[c].count), [&](Row& r) {
      for (std::size_t t = 0; t < types.size(); ++t)
        if (fits[c][t]) r.Term(1, var(c, t));
    });
  for (std::size_t t = 0; t < types.size(); ++t) {
    const NodeType& nt = types[t];
    const auto n = static_cast<double>(nt.count);
    auto add_each = [&](const char* name, double rhs, auto coefficient) {
      Constraint(&s, fmt::format("{}{}", name, t), rhs, [&](Row& r) {
        for (std::size_t c = 0; c < classes.size(); ++c)
          if (fits[c][t]) r.Term(coefficient(classes[c], c), var(c, t));
      });
    };
    add_each(
        "cpu", n * static_cast<double>(nt.cpu_milli) / 1000.0,
        [](const PodClass& pc, std::size_t) { return static_cast<double>(pc.cpu_milli) / 1000.0; });
    add_each("mem", n * static_cast<double>(nt.memory) / kGiB,
             [](const PodClass& pc, std::size_t) { return static_cast<double>(pc.memory) / kGiB; });
    add_each("gpu", n * nt.gpus, [&](const PodClass&, std::size_t c) { return gpus_of(c); });
    for (int k = 1; k <= kRoundingCuts; ++k)
      add_each(fmt::format("share{}_", k).c_str(), n * nt.gpus,
               [k](const PodClass& pc, std::size_t) {
                 return pc.gpus * RoundedShare(k, std::min(pc.milli, kMilliPerGpu));
               });
    std::vector<char> fits_t(classes.size());
    for (std::size_t c = 0; c < classes.size(); ++c) fits_t[c] = fits[c][t];
    if (!fillings.empty())  // else too many to list: the rounding rows alone
      lp.fillings += AddFillingRows(&s, t, nt, classes, fits_t, sizes, fillings);
  }
  if (obj.terms() == 0) s += " nothing: 0 none <= 0\n";  // the format needs a row
  s += "Bounds\n";
  if (obj.terms() == 0) s += " none = 0\n";
  s += "End\n";
  return lp;
}

std::optional<double> GlpsolOptimum(std::string_view report) {
  bool optimal = false;
  std::optional<double> value;
  std::istringstream in{std::string(report)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string head, word;
    words >> head;
    if (head == "Status:") {
      words >> word;
      optimal = word == "OPTIMAL";
    } else if (head == "Objective:") {
      // "Objective:  obj = 1234.5 (MAXimum)"
      while (words >> word && word != "=") {
      }
      double v = 0;
      if (word == "=" && words >> v) value = v;
    }
  }
  return optimal ? value : std::nullopt;
}

double LpUnallocatedPct(const PackingLp& lp, double allocated_gpus) {
  if (lp.capacity_milli <= 0) return 0;
  const double capacity = static_cast<double>(lp.capacity_milli) / kMilliPerGpu;
  return 100.0 * std::max(0.0, capacity - allocated_gpus) / capacity;
}

FillPlanLp BuildFillPlanLp(std::span<const FgdTask> tasks) {
  std::map<int, double> weight = SharingWeights(tasks);
  FillPlanLp lp;
  double total = 0, volume = 0;
  for (const auto& [share, w] : weight) {
    lp.sizes.push_back(share);
    total += w;
    volume += w * share;
  }
  if (lp.sizes.empty() || !(total > 0)) return lp;
  lp.fillings = GpuFillings(lp.sizes, kMaxFillings);
  if (lp.fillings.empty()) return lp;
  // The pods of one GPU on average: each share's part of them.
  const double pods_per_gpu = kMilliPerGpu * total / volume;
  std::string& s = lp.text;
  s += "\\ tidal fill plan: the fewest GPUs that hold one GPU's worth of the shares\n";
  s += "Minimize\n obj: ";
  Row obj(&s);
  for (std::size_t j = 0; j < lp.fillings.size(); ++j) obj.Term(1, fmt::format("y{}", j));
  s += "\nSubject To\n";
  for (std::size_t m = 0; m < lp.sizes.size(); ++m) {
    std::string row;
    Row r(&row);
    for (std::size_t j = 0; j < lp.fillings.size(); ++j)
      r.Term(lp.fillings[j][m], fmt::format("y{}", j));
    s += fmt::format(" share{}: {} >= {}\n", lp.sizes[m], row,
                     weight[lp.sizes[m]] / total * pods_per_gpu);
  }
  s += "End\n";
  return lp;
}

YAML::Node FillPlanArgs(const FillPlanLp& lp, std::span<const double> y, const std::string& model) {
  FillPlan plan;
  for (std::size_t j = 0; j < lp.fillings.size() && j < y.size(); ++j) {
    if (!(y[j] > 1e-9)) continue;
    std::vector<int> shares;
    for (std::size_t m = 0; m < lp.sizes.size(); ++m)
      shares.insert(shares.end(), static_cast<std::size_t>(lp.fillings[j][m]), lp.sizes[m]);
    plan.AllowFilling(shares);
  }
  YAML::Node args(YAML::NodeType::Sequence);
  for (int share : plan.shares()) {
    YAML::Node entry(YAML::NodeType::Map);
    entry["share"] = share;
    YAML::Node levels(YAML::NodeType::Sequence);
    for (int used : plan.Levels(share)) levels.push_back(used);
    entry["used"] = levels;
    if (!model.empty()) entry["model"] = model;
    args.push_back(entry);
  }
  return args;
}

std::optional<std::vector<double>> GlpsolColumns(std::string_view solution, std::size_t columns) {
  std::vector<double> values(columns, 0);
  std::vector<char> seen(columns, 0);
  bool optimal = false;
  std::istringstream in{std::string(solution)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "s") {
      // "s bas ROWS COLUMNS PRIMAL DUAL OBJECTIVE": both statuses feasible (f).
      std::string bas, primal, dual;
      std::size_t rows = 0, cols = 0;
      optimal = (words >> bas >> rows >> cols >> primal >> dual) && bas == "bas" &&
                cols == columns && primal == "f" && dual == "f";
    } else if (kind == "j") {
      // "j COLUMN STATUS PRIMAL DUAL"
      std::size_t j = 0;
      std::string status;
      double value = 0;
      if (!(words >> j >> status >> value) || j < 1 || j > columns) return std::nullopt;
      values[j - 1] = value;
      seen[j - 1] = 1;
    }
  }
  if (!optimal || std::find(seen.begin(), seen.end(), 0) != seen.end()) return std::nullopt;
  return values;
}

}  // namespace tidal::sim
