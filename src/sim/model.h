#pragma once
// The simulator's runtime model (docs/simulator.md, "Runtime model"): what the
// simulated hardware does to the tasks placed on it, one tick at a time. Its
// sub-models: memory (each task's real memory, OOM victims), storage (a node's
// disk await and how it slows IO-bound work), compute (time-slicing) and NVLink
// (link contention, or the PCIe fallback). It reads the cluster spec only:
// nothing here knows the policy or what the scheduler believes.
#include <cstddef>
#include <string>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/sim/spec.h"

namespace tidal::sim {

// One task of the workload: what was drawn for it, and where it stands.
struct Task {
  int id = 0;
  const TaskClass* cls = nullptr;
  PodDemand pod;
  TimeMs arrival_ms = 0;
  double duration_s = 0;
  Bytes peak = 0;
  double ramp_s = 0;
  const MemoryProfile* profile = nullptr;  // real memory follows it instead of the ramp
  Bytes estimate = 0;  // what Tidal thinks it needs per GPU (declared or estimated)
  enum class State { kWaiting, kPending, kRunning, kDone } state = State::kWaiting;
  TimeMs pending_since_ms = 0;  // since when it has been waiting (pending or in back-off)
  TimeMs queued_ms = 0;         // when it (re)entered the scheduling queue: its queue order
  int failures = 0;
  double waited_s = 0;
  int node = -1;
  std::vector<int> gpus;  // physical GPU positions; a time-sliced pod may get one twice
  // tidal.io/gpus as the extender wrote it (empty: none). Tidal's device plugin
  // gives exactly these; the stock plugin may give others (`gpus`).
  std::vector<int> named_gpus;
  TimeMs started_ms = 0;
  double progress_s = 0;
  TimeMs done_ms = 0;

  bool Active(TimeMs now) const {
    return state == State::kRunning && now >= started_ms + cls->startup_ms;
  }
  // Real memory on each of its GPUs at `now`: nothing while the container starts,
  // then the CUDA context, ramping to the peak.
  Bytes MemoryAt(TimeMs now) const;
};

// A node as the model runs it.
struct NodeRt {
  const NodeSpec* spec = nullptr;
  std::vector<std::vector<int>> tenants;  // per GPU: task ids (one per replica held)
  std::vector<int> tasks;                 // running task ids
  double await_ms = 0;
  std::vector<double> nvlink_util;  // per GPU
};

class RuntimeModel {
 public:
  // `tasks` outlives the model; the model advances their progress.
  RuntimeModel(const ClusterSpec& cluster, std::vector<Task>& tasks);

  const std::vector<NodeRt>& nodes() const { return nodes_; }

  // The task starts on its node and GPUs (t.node, t.gpus).
  void Place(const Task& t);
  // The task leaves its node and GPUs.
  void Remove(const Task& t);

  // One step of `dt_s` on node `n`: storage await, compute sharing, NVLink
  // contention and progress. Returns the tasks that finished their work.
  std::vector<int> Advance(std::size_t n, TimeMs now, double dt_s);
  // Memory: the task a GPU kills when its tenants' real memory exceeds its
  // capacity (the newest), or -1; `usage` gets the GPU's used / capacity.
  int OomVictim(std::size_t n, int gpu, TimeMs now, double* usage) const;

  // Real memory used per GPU of node `n`.
  std::vector<Bytes> UsedMemory(std::size_t n, TimeMs now) const;
  // Replicas held per GPU: what the node's device plugin counts.
  std::vector<int> Held(std::size_t n) const;

 private:
  std::vector<Task>& tasks_;
  std::vector<NodeRt> nodes_;
};

}  // namespace tidal::sim
