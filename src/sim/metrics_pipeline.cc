#include "sim/metrics_pipeline.h"

#include <utility>

namespace tidal::sim {

MetricsPipeline::MetricsPipeline(const RuntimeModel& model, const std::vector<Task>& tasks,
                                 NvlinkDetection nvlink)
    : model_(model), tasks_(tasks), nvlink_(std::move(nvlink)) {
  agent_.resize(model.nodes().size());
  scraped_.resize(model.nodes().size());
  cache_.resize(model.nodes().size());
}

void MetricsPipeline::Sample(TimeMs now) {
  for (std::size_t n = 0; n < model_.nodes().size(); ++n) {
    NodeSample s;
    s.present = true;
    s.at = now;
    s.used = model_.UsedMemory(n, now);
    s.nvlink_util = model_.nodes()[n].nvlink_util;
    s.await_ms = model_.nodes()[n].await_ms;
    s.competition = Competition(n);
    agent_[n] = std::move(s);
  }
}

double MetricsPipeline::Competition(std::size_t n) const {
  int pods = 0;
  for (int id : model_.nodes()[n].tasks) pods += PodUsesNvlink(nvlink_, tasks_[id].pod) ? 1 : 0;
  return NvlinkCompetitionIndex(pods, model_.nodes()[n].spec->gpu_count, nvlink_.slots_per_gpu);
}

}  // namespace tidal::sim
