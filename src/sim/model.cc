#include "sim/model.h"

#include <algorithm>

namespace tidal::sim {

namespace {

constexpr double kNvlinkCommIntensity = 0.6;  // NVLink bandwidth share one NVLink job drives
constexpr double kAwaitSlowdownMs = 30;       // storage await above which IO-bound work slows

bool Linked(const NodeSpec& s, const std::vector<int>& gpus) {
  for (std::size_t a = 0; a < gpus.size(); ++a)
    for (std::size_t b = a + 1; b < gpus.size(); ++b)
      if (gpus[a] == gpus[b] || s.links[gpus[a]][gpus[b]] == 0) return false;
  return true;
}

bool TalksOverNvlink(const Task& t) { return t.cls->uses_nvlink && t.gpus.size() >= 2; }

// What the active tasks of one node ask of it this step.
struct NodeDemand {
  double io = 0;             // Σ io.intensity: the disk's utilisation
  std::vector<double> duty;  // per GPU: Σ computeDuty
  std::vector<int> nvlink;   // per GPU: NVLink jobs on linked GPUs
  int pcie_comm = 0;         // NVLink jobs left on PCIe
};

// Storage: M/M/1 below 90 % utilisation, continued linearly with its slope there:
// a saturated disk's queue keeps growing with demand.
double DiskAwaitMs(const DiskSpec& disk, double rho, TimeMs now) {
  const double base = disk.degrade_at_ms >= 0 && now >= disk.degrade_at_ms ? disk.degraded_await_ms
                                                                           : disk.base_await_ms;
  return rho <= 0.9 ? base / (1 - rho) : base * 10 + (rho - 0.9) * base * 100;
}

// Storage: the share of an IO-bound task's time spent waiting stretches once
// await passes kAwaitSlowdownMs.
double StorageFactor(double io_bound, double await_ms) {
  return 1 / (1 - io_bound + io_bound * std::max(1.0, await_ms / kAwaitSlowdownMs));
}

// Compute: time-slicing; a task runs at the rate of its most shared GPU.
double ComputeRate(const Task& t, const std::vector<double>& duty) {
  double rate = 1;
  for (int g : t.gpus) rate = std::min(rate, duty[g] > 1 ? 1 / duty[g] : 1.0);
  return rate;
}

}  // namespace

Bytes Task::MemoryAt(TimeMs now) const {
  if (!Active(now)) return 0;
  const double t = static_cast<double>(now - started_ms - cls->startup_ms) / 1000.0;
  if (profile)
    return std::max(cls->memory_context,
                    static_cast<Bytes>(profile->At(t) * static_cast<double>(peak)));
  const double f = ramp_s > 0 ? std::min(1.0, t / ramp_s) : 1.0;
  return cls->memory_context +
         static_cast<Bytes>(f * static_cast<double>(peak - cls->memory_context));
}

RuntimeModel::RuntimeModel(const ClusterSpec& cluster, std::vector<Task>& tasks) : tasks_(tasks) {
  for (const auto& n : cluster.nodes) {
    NodeRt rt;
    rt.spec = &n;
    rt.tenants.resize(n.gpu_count);
    rt.nvlink_util.assign(n.gpu_count, 0);
    nodes_.push_back(std::move(rt));
  }
}

void RuntimeModel::Place(const Task& t) {
  NodeRt& rt = nodes_[t.node];
  rt.tasks.push_back(t.id);
  for (int g : t.gpus) rt.tenants[g].push_back(t.id);
}

void RuntimeModel::Remove(const Task& t) {
  NodeRt& node = nodes_[t.node];
  for (int g : t.gpus) {
    auto& v = node.tenants[g];
    v.erase(std::find(v.begin(), v.end(), t.id));
  }
  node.tasks.erase(std::find(node.tasks.begin(), node.tasks.end(), t.id));
}

std::vector<int> RuntimeModel::Advance(std::size_t n, TimeMs now, double dt_s) {
  NodeRt& node = nodes_[n];
  const NodeSpec& spec = *node.spec;
  NodeDemand demand;
  demand.duty.assign(spec.gpu_count, 0.0);
  demand.nvlink.assign(spec.gpu_count, 0);
  for (int id : node.tasks) {
    const Task& t = tasks_[id];
    if (!t.Active(now)) continue;
    demand.io += t.cls->io_intensity;
    for (int g : t.gpus) demand.duty[g] += t.cls->compute_duty;
    if (!TalksOverNvlink(t)) continue;
    if (Linked(spec, t.gpus))
      for (int g : t.gpus) ++demand.nvlink[g];
    else
      ++demand.pcie_comm;
  }
  node.await_ms = DiskAwaitMs(spec.disk, demand.io, now);
  std::fill(node.nvlink_util.begin(), node.nvlink_util.end(), 0.0);
  std::vector<int> finished;
  for (int id : node.tasks) {
    Task& t = tasks_[id];
    if (!t.Active(now)) continue;
    double rate = ComputeRate(t, demand.duty);
    rate *= StorageFactor(t.cls->io_bound, node.await_ms);
    if (TalksOverNvlink(t) && Linked(spec, t.gpus)) {
      // NVLink: each GPU's links serve the cluster's slots at full speed; the
      // traffic each job drives at its rate is the GPUs' utilisation.
      const int slots = spec.nvlink_slots_per_gpu;
      for (int g : t.gpus)
        rate = std::min(rate, demand.nvlink[g] > slots ? double(slots) / demand.nvlink[g] : 1.0);
      for (int g : t.gpus)
        node.nvlink_util[g] = std::min(1.0, node.nvlink_util[g] + kNvlinkCommIntensity * rate);
    } else if (TalksOverNvlink(t)) {
      // Over PCIe: slower, and the node's fabric shared by all such jobs.
      rate /= spec.pcie_nvlink_slowdown;
      if (demand.pcie_comm > spec.pcie_nvlink_jobs)
        rate *= double(spec.pcie_nvlink_jobs) / demand.pcie_comm;
    }
    t.progress_s += rate * dt_s;
    if (t.progress_s >= t.duration_s) finished.push_back(id);
  }
  return finished;
}

int RuntimeModel::OomVictim(std::size_t n, int gpu, TimeMs now, double* usage) const {
  const NodeRt& node = nodes_[n];
  Bytes used = 0;
  int newest = -1;
  for (int id : node.tenants[gpu]) {
    used += tasks_[id].MemoryAt(now);
    if (tasks_[id].Active(now) &&
        (newest < 0 || tasks_[id].started_ms > tasks_[newest].started_ms ||
         (tasks_[id].started_ms == tasks_[newest].started_ms && id > newest)))
      newest = id;
  }
  *usage = static_cast<double>(used) / static_cast<double>(node.spec->gpu_memory);
  return used <= node.spec->gpu_memory ? -1 : newest;
}

std::vector<Bytes> RuntimeModel::UsedMemory(std::size_t n, TimeMs now) const {
  std::vector<Bytes> used(nodes_[n].tenants.size(), 0);
  for (std::size_t g = 0; g < used.size(); ++g)
    for (int id : nodes_[n].tenants[g]) used[g] += tasks_[id].MemoryAt(now);
  return used;
}

std::vector<int> RuntimeModel::Held(std::size_t n) const {
  std::vector<int> held;
  for (const auto& tenants : nodes_[n].tenants) held.push_back(static_cast<int>(tenants.size()));
  return held;
}

}  // namespace tidal::sim
