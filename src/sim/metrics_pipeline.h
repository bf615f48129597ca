#pragma once
// The simulator's metrics pipeline (docs/simulator.md, "Metrics pipeline"): as in
// production, the agent samples each node, Prometheus scrapes the latest sample
// and the extender's cache copies the latest scrape, each on its own period, so
// that policies see old loads. The driver calls each stage at its time.
#include <cstddef>
#include <vector>

#include "sim/model.h"
#include "tidal/core/types.h"
#include "tidal/kubetypes/pod.h"

namespace tidal::sim {

// What the agent measured on one node at one instant; the pipeline passes it on.
struct NodeSample {
  bool present = false;  // false: no sample yet (the node is unknown)
  TimeMs at = 0;
  std::vector<Bytes> used;
  std::vector<double> nvlink_util;
  double await_ms = 0;
  double competition = 0;
};

class MetricsPipeline {
 public:
  // `nvlink`: how the agent recognises an NVLink pod and the slots per GPU its
  // competition index assumes (the policy config's, as in production).
  MetricsPipeline(const RuntimeModel& model, const std::vector<Task>& tasks,
                  NvlinkDetection nvlink);

  void Sample(TimeMs now);  // the agent, on every node
  void Scrape() { scraped_ = agent_; }
  void Refresh() { cache_ = scraped_; }  // the extender's cache

  const std::vector<NodeSample>& scraped() const { return scraped_; }
  const std::vector<NodeSample>& cache() const { return cache_; }

  // Node n's NVLink competition index now, from the pods running there.
  double Competition(std::size_t n) const;

 private:
  const RuntimeModel& model_;
  const std::vector<Task>& tasks_;
  NvlinkDetection nvlink_;
  std::vector<NodeSample> agent_, scraped_, cache_;
};

}  // namespace tidal::sim
