#include "tidal/sim/packing_lp.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
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

// One row or the objective: " name: a x + b y ..." over lines of a few terms.
class Row {
 public:
  explicit Row(std::string* out) : out_(out) {}
  void Term(double coefficient, const std::string& var) {
    if (coefficient == 0) return;
    *out_ += fmt::format("{}{} {}", terms_ == 0 ? "" : (terms_ % 6 == 0 ? "\n   + " : " + "),
                         coefficient, var);
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

}  // namespace

PackingLp BuildPackingLp(std::span<const NodeState> nodes, std::span<const PodDemand> pods) {
  const std::vector<PodClass> classes = Classes(pods);
  const std::vector<NodeType> types = Types(nodes);
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

}  // namespace tidal::sim
