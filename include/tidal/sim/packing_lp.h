#pragma once
// A lower bound on the GPUs any placement of a set of pods must leave
// unallocated: the LP relaxation of the packing (docs/traces.md), written in
// CPLEX LP format for an LP solver (glpsol reads it). Identical nodes are one
// node type and identical pods one class, which loses nothing in the relaxation
// (any fractional placement can be averaged over the nodes of a type).
//
//   maximise  Σ x[c][t] · gpus_c · share_c                 (GPUs allocated)
//   pods c:   Σ_t x[c][t] ≤ n_c
//   cpu, memory, GPU share of type t: Σ_c x[c][t] · demand_c ≤ N_t · capacity_t
//   k = 1..6: Σ_c gpus_c · u_k(share_c) · x[c][t] ≤ N_t · GPUs_t
//   share m:  Σ_{c of share m} gpus_c · x[c][t] ≤ Σ_f f_m · y[t][f]
//   GPUs:     Σ_f y[t][f] + Σ_{c whole} gpus_c · x[c][t] ≤ N_t · GPUs_t
//
// x[c][t] ≥ 0 exists only where one pod of c fits an empty node of t (GPU count,
// model, CPU, memory). u_k is Fekete and Schepers' dual feasible function
// (share where (k+1)·share is whole, else ⌊(k+1)·share⌋/k): shares that fit one
// GPU together are worth at most 1, so the k rows hold for every integer
// placement, and they tighten the relaxation where pods share GPUs (two shares
// over half never share one; beside a 0.81 share only shares up to 0.19 fit).
// y[t][f] ≥ 0 GPUs of type t hold filling f, a way to fill one GPU with shares
// (f_m of share m) that leaves no room for another: the configuration LP of one
// GPU, which the u_k rows only approximate (without it when tiny shares make too
// many fillings to list).
// Pods may be left out, so the bound holds for every scheduler, also those that
// must place each pod that fits.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/policy/fragmentation.h"

namespace tidal::sim {

struct PackingLp {
  std::string text;                 // the LP, CPLEX LP format
  std::int64_t capacity_milli = 0;  // the nodes' GPUs, in milli-GPU
  std::size_t classes = 0;          // pod classes with a GPU request
  std::size_t node_types = 0;       // node types with GPUs
  std::size_t variables = 0;        // (class, type) pairs where a pod fits
  std::size_t fillings = 0;         // (type, way to fill one GPU with shares) columns
};

// Nodes as the trace experiments see them (allocatable CPU and memory, GPUs of
// one model) and pods with their requests; CPU-only pods cannot raise the GPUs
// allocated and are left out.
PackingLp BuildPackingLp(std::span<const NodeState> nodes, std::span<const PodDemand> pods);

// The optimum of a solved LP from glpsol's report (`glpsol --lp F -o REPORT`):
// its "Objective:" value when "Status:" is OPTIMAL, nullopt otherwise.
std::optional<double> GlpsolOptimum(std::string_view report);

// Unallocated GPU % at the LP's optimum (`allocated_gpus` GPUs).
double LpUnallocatedPct(const PackingLp& lp, double allocated_gpus);

// The fgd plugin's fill plan for a target workload: the cutting-stock LP of its
// sharing task types (one GPU, a share under a whole one). y[f] ≥ 0 GPUs filled
// as f (a way to fill one GPU that leaves no room for another share); minimise
// Σ y so that each share gets at least its expected pods of one GPU's worth of
// the workload. The fillings the optimum uses say which shares go together: every
// share is in one (covering, unlike the bound above, where pods may be left out).
struct FillPlanLp {
  std::string text;                        // CPLEX LP format; empty without columns
  std::vector<int> sizes;                  // the shares, ascending
  std::vector<std::vector<int>> fillings;  // column j (y{j}): how many of each size
};
FillPlanLp BuildFillPlanLp(std::span<const FgdTask> tasks);
// The fgd plugin's `fillPlan` arg: for each share of a filling used (y > 0), the
// fill levels (milli) the rest of that filling can make; each entry names
// `model` where one is given (the plan for that model's GPUs).
YAML::Node FillPlanArgs(const FillPlanLp& lp, std::span<const double> y,
                        const std::string& model = "");
// The columns' values from glpsol's solution file (`glpsol --lp F -w SOLUTION`),
// nullopt unless it is optimal and has `columns` of them.
std::optional<std::vector<double>> GlpsolColumns(std::string_view solution, std::size_t columns);

}  // namespace tidal::sim
