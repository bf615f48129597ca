#pragma once
// Fluent fixture builders for tests: NodeBuilder("n1").Gpus(4, 24_Gi).Used(0, 12_Gi).
#include <string>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/policy/config.h"
#include "tidal/policy/cycle.h"

namespace tidal::testing {

constexpr Bytes kMi = Bytes{1} << 20;
constexpr Bytes kGi = Bytes{1} << 30;

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) { n_.name = std::move(name); }
  // `count` GPUs of `total` bytes each, none used, no NVLink.
  NodeBuilder& Gpus(int count, Bytes total, std::string model = "A10") {
    n_.gpus.clear();
    for (int i = 0; i < count; ++i) {
      Gpu g;
      g.index = i;
      g.model = model;
      g.memory_total = total;
      n_.gpus.push_back(g);
    }
    return *this;
  }
  NodeBuilder& Used(int gpu, Bytes used) {
    n_.gpus.at(gpu).memory_used = used;
    return *this;
  }
  // Every GPU at the same utilisation fraction of its memory.
  NodeBuilder& MemoryFraction(double f) {
    for (auto& g : n_.gpus)
      g.memory_used = static_cast<Bytes>(f * static_cast<double>(g.memory_total));
    return *this;
  }
  NodeBuilder& Link(int a, int b, int links) {
    n_.gpus.at(a).nvlink_peers.push_back({b, links});
    n_.gpus.at(b).nvlink_peers.push_back({a, links});
    return *this;
  }
  NodeBuilder& FullyLinked(int links) {
    for (std::size_t a = 0; a < n_.gpus.size(); ++a)
      for (std::size_t b = a + 1; b < n_.gpus.size(); ++b)
        Link(static_cast<int>(a), static_cast<int>(b), links);
    return *this;
  }
  NodeBuilder& Await(double ms) {
    n_.storage_await_ms = ms;
    return *this;
  }
  NodeBuilder& Competition(double c) {
    n_.nvlink_competition = c;
    return *this;
  }
  NodeBuilder& Label(std::string k, std::string v) {
    n_.labels[std::move(k)] = std::move(v);
    return *this;
  }
  NodeBuilder& Unknown() {
    n_.metrics_known = false;
    return *this;
  }
  NodeBuilder& Allocatable(int gpus, int requested = 0) {
    n_.allocatable_gpus = gpus;
    n_.gpus_requested = requested;
    return *this;
  }
  NodeBuilder& Resources(std::int64_t cpu_milli, Bytes memory, std::int64_t cpu_req = 0,
                         Bytes mem_req = 0) {
    n_.cpu_milli_allocatable = cpu_milli;
    n_.memory_allocatable = memory;
    n_.cpu_milli_requested = cpu_req;
    n_.memory_requested = mem_req;
    return *this;
  }
  // Free milli-GPU per GPU (creates the GPUs if there are none yet).
  NodeBuilder& MilliFree(std::vector<int> free, std::string model = "V100M16") {
    if (n_.gpus.size() != free.size()) Gpus(static_cast<int>(free.size()), 16 * kGi, model);
    for (std::size_t i = 0; i < free.size(); ++i) n_.gpus[i].milli_free = free[i];
    return *this;
  }
  NodeBuilder& PodKinds(std::uint64_t kinds) {
    n_.gpu_pod_kinds = kinds;
    return *this;
  }
  NodeState Build() const {
    NodeState n = n_;
    n.Finalize();
    return n;
  }

 private:
  NodeState n_;
};

class PodBuilder {
 public:
  explicit PodBuilder(std::string name = "pod") { p_.name = std::move(name); }
  PodBuilder& Namespace(std::string ns) {
    p_.namespace_name = std::move(ns);
    return *this;
  }
  PodBuilder& Gpus(int n) {
    p_.gpu_count = n;
    return *this;
  }
  PodBuilder& Memory(Bytes per_gpu) {
    p_.gpu_memory_per_gpu = per_gpu;
    p_.gpu_memory_declared = true;
    return *this;
  }
  PodBuilder& NvlinkRequired() {
    p_.nvlink_required = true;
    return *this;
  }
  PodBuilder& AutoNvlink() {
    p_.nvlink_auto = true;
    return *this;
  }
  PodBuilder& Image(std::string image) {
    p_.images.push_back(std::move(image));
    return *this;
  }
  PodBuilder& RejectThreshold(double t) {
    p_.gpu_reject_threshold = t;
    return *this;
  }
  PodBuilder& Invalid(std::string reason) {
    p_.invalid_reason = std::move(reason);
    return *this;
  }
  PodBuilder& LoadType(tidal::LoadType t) {
    p_.load_type = t;
    return *this;
  }
  PodBuilder& Requests(std::int64_t cpu_milli, Bytes memory) {
    p_.cpu_milli = cpu_milli;
    p_.memory_request = memory;
    return *this;
  }
  // A GPU share per GPU in milli-GPU (1000: whole GPUs).
  PodBuilder& Milli(int gpus, int milli) {
    p_.gpu_count = gpus;
    p_.gpu_milli = milli;
    return *this;
  }
  PodBuilder& Models(std::vector<std::string> models) {
    p_.gpu_models = std::move(models);
    return *this;
  }
  PodDemand Build() const { return p_; }

 private:
  PodDemand p_;
};

// A config with no safety margin (the worked cases of docs/design.md are stated without one).
inline PolicyConfig NoMarginConfig() {
  PolicyConfig c = DefaultPolicyConfig();
  c.reject_threshold_safety_margin = 0;
  return c;
}

inline CycleState Cycle(const PolicyConfig& config, const PodDemand& pod) {
  CycleState cs;
  BuildCycleState(config, pod, &cs);
  return cs;
}

}  // namespace tidal::testing
