// FillPlan and PlanFills (declared in tidal/policy/fragmentation.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
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

void FillPlan::AllowFilling(std::span<const int> shares) {
  for (std::size_t self = 0; self < shares.size(); ++self) {
    // The fill levels the other shares make: their subset sums.
    std::vector<char> can(kMilliPerGpu + 1, 0);
    can[0] = 1;
    for (std::size_t other = 0; other < shares.size(); ++other) {
      if (other == self) continue;
      for (int u = kMilliPerGpu - shares[other]; u >= 0; --u)
        if (can[static_cast<std::size_t>(u)]) can[static_cast<std::size_t>(u + shares[other])] = 1;
    }
    for (int u = 1; u <= kMilliPerGpu - shares[self]; ++u)
      if (can[static_cast<std::size_t>(u)]) Allow(shares[self], u);
  }
}

std::vector<int> FillPlan::Levels(int share) const {
  std::vector<int> levels;
  for (int u = 1; u <= kMilliPerGpu; ++u)
    if (Planned(share, u)) levels.push_back(u);
  return levels;
}

bool FillPlan::Planned(int share, int used) const {
  const auto at = std::lower_bound(shares_.begin(), shares_.end(), share);
  if (at == shares_.end() || *at != share || used < 0 || used > kMilliPerGpu) return false;
  return planned_[static_cast<std::size_t>(at - shares_.begin())][static_cast<std::size_t>(used)];
}

const FillPlan& FillPlan::For(const std::string& model) const {
  for (const auto& [m, plan] : by_model_)
    if (m == model) return plan;
  return *this;
}

void FillPlan::SetForModel(const std::string& model, FillPlan plan) {
  for (auto& [m, p] : by_model_)
    if (m == model) {
      p = std::move(plan);
      return;
    }
  by_model_.emplace_back(model, std::move(plan));
}

namespace {
// A type the plans are for: one GPU, shared, and seen.
bool PlansFor(const FgdTask& t) {
  return t.gpus == 1 && t.gpu_milli > 0 && t.gpu_milli < kMilliPerGpu && t.weight > 0;
}
}  // namespace

std::map<int, double> SharingWeights(std::span<const FgdTask> tasks) {
  std::map<int, double> weight;
  for (const FgdTask& t : tasks)
    if (PlansFor(t)) weight[t.gpu_milli] += t.weight;
  return weight;
}

namespace {

// `pods` shares in the sharing task types' proportions, largest first.
std::vector<int> SharesLargestFirst(std::span<const FgdTask> tasks, int pods) {
  const std::map<int, double> weight = SharingWeights(tasks);
  double total = 0;
  for (const auto& [share, w] : weight) total += w;
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

FillPlan PlanOfTasks(std::span<const FgdTask> tasks, int pods) {
  FillPlan plan;
  for (const std::multiset<int>& gpu : FilledGpus(SharesLargestFirst(tasks, pods)))
    plan.AllowFilling(std::vector<int>(gpu.begin(), gpu.end()));
  return plan;
}

// The models sharing types name, the kMaxPlannedModels heaviest, in name order.
std::set<std::string> SharingModels(std::span<const FgdTask> tasks) {
  std::map<std::string, double> weight;
  for (const FgdTask& t : tasks)
    if (PlansFor(t))
      for (const std::string& m : t.models) weight[m] += t.weight;
  std::vector<std::pair<double, std::string>> heaviest;
  for (const auto& [model, w] : weight) heaviest.emplace_back(-w, model);
  std::sort(heaviest.begin(), heaviest.end());
  if (heaviest.size() > kMaxPlannedModels) heaviest.resize(kMaxPlannedModels);
  std::set<std::string> named;
  for (const auto& entry : heaviest) named.insert(entry.second);
  return named;
}

}  // namespace

std::vector<ModelTasks> TasksByPlannedModel(std::span<const FgdTask> tasks) {
  std::vector<ModelTasks> groups(1);
  for (const std::string& model : SharingModels(tasks)) groups.push_back({model, {}});
  for (const FgdTask& t : tasks)
    for (ModelTasks& group : groups)
      if (group.model.empty() ? t.models.empty() : ModelAccepted(t.models, group.model))
        group.tasks.push_back(t);
  return groups;
}

FillPlan PlanFills(std::span<const FgdTask> tasks, int pods) {
  const std::vector<ModelTasks> groups = TasksByPlannedModel(tasks);
  FillPlan plan = PlanOfTasks(groups.front().tasks, pods);
  for (std::size_t i = 1; i < groups.size(); ++i)
    plan.SetForModel(groups[i].model, PlanOfTasks(groups[i].tasks, pods));
  return plan;
}

}  // namespace tidal
