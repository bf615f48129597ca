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
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tidal/core/types.h"

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

}  // namespace tidal::sim
