// FillPlan and PlanFills (declared in tidal/policy/fragmentation.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "tidal/policy/fragmentation.h"
#include "tidal/policy/milli_gpu.h"

namespace tidal {

void FillPlan::Allow(int share, int used) {
  const auto at = std::lower_bound(shares_.begin(), shares_.end(), share);
  const auto k = static_cast<std::size_t>(at - shares_.begin());
  if (at == shares_.end() || *at != share) {
    shares_.insert(at, share);
    planned_.insert(planned_.begin() + static_cast<std::ptrdiff_t>(k),
                    std::vector<char>(kMilliPerGpu + 1, 0));
  }
  planned_[k][static_cast<std::size_t>(used)] = 1;
}

bool FillPlan::Planned(int share, int used) const {
  const auto at = std::lower_bound(shares_.begin(), shares_.end(), share);
  if (at == shares_.end() || *at != share || used < 0 || used > kMilliPerGpu) return false;
  return planned_[static_cast<std::size_t>(at - shares_.begin())][static_cast<std::size_t>(used)];
}

namespace {

// `pods` shares in the sharing task types' proportions, largest first.
std::vector<int> SharesLargestFirst(std::span<const FgdTask> tasks, int pods) {
  std::map<int, double> weight;
  double total = 0;
  for (const FgdTask& t : tasks)
    if (t.gpus == 1 && t.gpu_milli > 0 && t.gpu_milli < kMilliPerGpu && t.weight > 0) {
      weight[t.gpu_milli] += t.weight;
      total += t.weight;
    }
  std::vector<int> shares;
  for (auto it = weight.rbegin(); it != weight.rend(); ++it) {
    const auto count = std::lround(it->second / total * pods);
    shares.insert(shares.end(), static_cast<std::size_t>(count), it->first);
  }
  return shares;
}

// The GPUs best-fit decreasing fills with `shares`, each as its shares, distinct.
std::set<std::multiset<int>> FilledGpus(const std::vector<int>& shares) {
  std::vector<std::multiset<int>> gpus;
  std::multimap<int, std::size_t> room;  // free milli -> GPU
  for (int share : shares) {
    auto fullest = room.lower_bound(share);
    std::size_t g = gpus.size();
    int free = kMilliPerGpu;
    if (fullest == room.end()) {
      gpus.emplace_back();
    } else {
      g = fullest->second;
      free = fullest->first;
      room.erase(fullest);
    }
    gpus[g].insert(share);
    room.emplace(free - share, g);
  }
  return {gpus.begin(), gpus.end()};
}

}  // namespace

FillPlan PlanFills(std::span<const FgdTask> tasks, int pods) {
  FillPlan plan;
  for (const std::multiset<int>& gpu : FilledGpus(SharesLargestFirst(tasks, pods)))
    for (auto self = gpu.begin(); self != gpu.end(); ++self) {
      // The fill levels the GPU's other shares make: its subset sums.
      std::vector<char> can(kMilliPerGpu + 1, 0);
      can[0] = 1;
      for (auto other = gpu.begin(); other != gpu.end(); ++other) {
        if (other == self) continue;
        for (int u = kMilliPerGpu - *other; u >= 0; --u)
          if (can[static_cast<std::size_t>(u)]) can[static_cast<std::size_t>(u + *other)] = 1;
      }
      for (int u = 1; u <= kMilliPerGpu - *self; ++u)
        if (can[static_cast<std::size_t>(u)]) plan.Allow(*self, u);
    }
  return plan;
}

}  // namespace tidal
