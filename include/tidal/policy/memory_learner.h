#pragma once
// Learned GPU memory per workload (docs/design.md#prediction): pods that do not declare
// ai.gpu-memory get a high quantile of what earlier pods of the same workload
// really used at their peak, instead of the per-type guess (design.md#memory-estimate), once enough
// of them have been seen. Thread-safe: the extender's requests read while its
// refresher observes.
#include <deque>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "tidal/core/status.h"
#include "tidal/core/types.h"
#include "tidal/policy/config.h"

namespace tidal {

// namespace | image repository (no tag or digest) | AI_LOAD_TYPE | ai.model-size
// bytes | GPU count. Pods of one Deployment or Job share it; a new model version
// under the same image and size is the same workload for memory purposes.
std::string WorkloadKey(const PodDemand& pod);

class MemoryLearner {
 public:
  explicit MemoryLearner(MemoryLearningConfig config) : config_(std::move(config)) {}

  // One pod's peak GPU memory per GPU (bytes), observed over its run.
  void Observe(const std::string& key, Bytes peak_per_gpu);
  // quantile × (1 + headroom) of the recent peaks, rounded up to a MiB; empty
  // before minSamples peaks exist for the key.
  std::optional<Bytes> Estimate(const std::string& key) const;
  // The estimate for a pod: empty if it declares its memory or the key is cold.
  std::optional<Bytes> EstimateFor(const PodDemand& pod) const;

  std::size_t keys() const;
  std::size_t samples(const std::string& key) const;
  // Observations since the last Serialize (the extender saves only then).
  bool dirty() const;

  // A text file: a header line, then "key<TAB>peak peak ..." per key, oldest
  // first. Load replaces what is held; on error nothing changes and the message
  // names the line.
  std::string Serialize();
  Status Load(std::string_view text);

  const MemoryLearningConfig& config() const { return config_; }

 private:
  MemoryLearningConfig config_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::deque<Bytes>> peaks_;
  bool dirty_ = false;
};

// Reads `path` into `learner` (a missing file is an empty start, not an error);
// SaveLearnedMemory writes a temporary file beside it and renames it over, so a
// crash never leaves half a file.
// A missing file is no data. An empty one, or one with our header and a line cut
// short, is no data too, and `warning` (if given) says so; any other content is
// an error (it is not ours, and the next save would overwrite it).
Status LoadLearnedMemory(const std::string& path, MemoryLearner* learner,
                         std::string* warning = nullptr);
Status SaveLearnedMemory(const std::string& path, MemoryLearner* learner);

}  // namespace tidal
