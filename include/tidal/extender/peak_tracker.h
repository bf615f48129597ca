#pragma once
// Where memoryLearning's observations come from in the extender: the agent
// measures GPUs, not pods, so a pod's GPU memory is read from the GPUs its
// bind recorded (tidal.io/gpus) while it is the only tracked pod on them. Its
// peak over the run goes to the learner when the pod ends. A pod that ever
// shared a GPU with another tracked pod teaches nothing (its share is unknown).
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tidal/metrics/snapshot.h"
#include "tidal/policy/memory_learner.h"

namespace tidal::extender {

class PodPeakTracker {
 public:
  explicit PodPeakTracker(MemoryLearner& learner) : learner_(learner) {}

  // A bound GPU pod from the pod watch, on these GPU indices of `node`.
  void Running(const std::string& pod_key, const std::string& workload, const std::string& node,
               const std::vector<int>& gpus);
  // The pod finished (Succeeded, Failed) or was deleted: its peak is learned if
  // it was seen alone on its GPUs in at least one sample.
  void Ended(const std::string& pod_key);
  // A new metrics snapshot: raises each lone pod's peak to the most used on any
  // of its GPUs (the agent reports per-GPU memory; a multi-GPU pod's per-GPU need
  // is its busiest GPU).
  void Sample(const MetricsSnapshot& snapshot);

  std::size_t tracked() const;

 private:
  struct Tracked {
    std::string workload, node;
    std::vector<int> gpus;
    Bytes peak = 0;
    int samples = 0;
    bool shared = false;
    TimeMs last_sample_ms = 0;
  };
  MemoryLearner& learner_;
  mutable std::mutex mu_;
  std::map<std::string, Tracked> pods_;
};

// The GPU indices of a `tidal.io/gpus` annotation ("0,3"); empty if malformed.
std::vector<int> ParseGpuAnnotation(const std::string& value);

}  // namespace tidal::extender
