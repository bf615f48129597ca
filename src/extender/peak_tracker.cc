#include "tidal/extender/peak_tracker.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace tidal::extender {

std::vector<int> ParseGpuAnnotation(const std::string& value) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    int v = -1;
    const char* b = value.data() + start;
    const char* e = value.data() + comma;
    const auto r = std::from_chars(b, e, v);
    if (b == e || r.ec != std::errc() || r.ptr != e || v < 0 || v >= kMaxGpusPerNode) return {};
    out.push_back(v);
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) return {};
  return out;
}

void PodPeakTracker::Running(const std::string& pod_key, const std::string& workload,
                             const std::string& node, const std::vector<int>& gpus) {
  if (gpus.empty() || node.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  Tracked& t = pods_[pod_key];
  if (t.node != node || t.gpus != gpus) {  // new, or (re)bound elsewhere
    t = Tracked{};
    t.node = node;
    t.gpus = gpus;
  }
  t.workload = workload;
}

void PodPeakTracker::Ended(const std::string& pod_key) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = pods_.find(pod_key);
  if (it == pods_.end()) return;
  const Tracked& t = it->second;
  if (!t.shared && t.samples > 0 && t.peak > 0) learner_.Observe(t.workload, t.peak);
  pods_.erase(it);
}

void PodPeakTracker::Sample(const MetricsSnapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  // Which tracked pods sit on each GPU.
  std::map<std::pair<std::string, int>, int> holders;
  for (const auto& [key, t] : pods_)
    for (int g : t.gpus) ++holders[{t.node, g}];
  for (auto& [key, t] : pods_) {
    const auto n = snapshot.nodes.find(t.node);
    if (n == snapshot.nodes.end() || !n->second.usable) continue;
    if (n->second.sample_time_ms <= t.last_sample_ms) continue;  // the same sample again
    Bytes most = -1;
    bool alone = true;
    for (int g : t.gpus) {
      alone = alone && holders[{t.node, g}] == 1;
      for (const Gpu& gpu : n->second.gpus)
        if (gpu.index == g) most = std::max(most, gpu.memory_used);
    }
    if (!alone) t.shared = true;
    if (t.shared || most < 0) continue;
    t.peak = std::max(t.peak, most);
    ++t.samples;
    t.last_sample_ms = n->second.sample_time_ms;
  }
}

std::size_t PodPeakTracker::tracked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_.size();
}

}  // namespace tidal::extender
