#include "policy/plugins/fgd/fgd_args.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "tidal/policy/milli_gpu.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

FgdArgs FgdArgs::Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors) {
  FgdArgs a;
  // Without a target workload: one whole GPU per task, so a partly used GPU's free
  // share is the fragment.
  FgdArgs defaults{{FgdTask{0, 1, 1000, {}, 1.0}}};
  if (!node || node.IsNull()) return defaults;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"tasks", "tieBreak"}, errors);
  std::string tie = "none";
  ReadString(node, path, "tieBreak", &tie, errors);
  if (tie == "none")
    a.tie_break = FgdTieBreak::kNone;
  else if (tie == "pack")
    a.tie_break = FgdTieBreak::kPack;
  else
    errors.Add(Join(path, "tieBreak"), "\"" + tie + "\" (expected none or pack)");
  defaults.tie_break = a.tie_break;
  const YAML::Node tasks = node["tasks"];
  const std::string tpath = Join(path, "tasks");
  if (!tasks) return defaults;
  if (!tasks.IsSequence()) {
    errors.Add(tpath, "expected a list of {cpuMilli, gpus, gpuMilli, models, weight}");
    return a;
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const std::string p = tpath + "[" + std::to_string(i) + "]";
    const YAML::Node t = tasks[i];
    if (!IsMap(t, p, errors)) continue;
    CheckKeys(t, p, {"cpuMilli", "gpus", "gpuMilli", "models", "weight"}, errors);
    FgdTask task;
    int cpu = 0;
    ReadInt(t, p, "cpuMilli", &cpu, errors);
    task.cpu_milli = cpu;
    ReadInt(t, p, "gpus", &task.gpus, errors);
    ReadInt(t, p, "gpuMilli", &task.gpu_milli, errors);
    ReadDouble(t, p, "weight", &task.weight, errors);
    if (const YAML::Node m = t["models"]) {
      if (!m.IsSequence())
        errors.Add(Join(p, "models"), "expected a list of GPU model names");
      else
        for (const auto& v : m) {
          if (v.IsScalar())
            task.models.push_back(v.as<std::string>());
          else
            errors.Add(Join(p, "models"), "expected a list of GPU model names");
        }
    }
    a.tasks.push_back(std::move(task));
  }
  return a;
}

void FgdArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  const std::string tpath = Join(path, "tasks");
  if (tasks.empty()) errors.Add(tpath, "empty (expected the target workload's task types)");
  double sum = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const FgdTask& t = tasks[i];
    const std::string p = tpath + "[" + std::to_string(i) + "]";
    if (t.cpu_milli < 0) errors.Add(Join(p, "cpuMilli"), "must be >= 0");
    if (t.gpus < 0 || t.gpus > kMaxGpusPerNode) errors.Add(Join(p, "gpus"), "must be in 0..64");
    if (t.gpu_milli < 0 || t.gpu_milli > kMilliPerGpu)
      errors.Add(Join(p, "gpuMilli"), "must be in 0..1000");
    if ((t.gpus == 0) != (t.gpu_milli == 0))
      errors.Add(Join(p, "gpuMilli"), "must be 0 exactly when gpus is 0");
    if (t.gpus > 1 && t.gpu_milli != kMilliPerGpu)
      errors.Add(Join(p, "gpuMilli"), "must be 1000 for more than one GPU");
    if (!(t.weight > 0) || !std::isfinite(t.weight)) errors.Add(Join(p, "weight"), "must be > 0");
    sum += t.weight;
  }
  if (!tasks.empty() && std::fabs(sum - 1) > 1e-6)
    errors.Add(tpath, "weights sum to " + Fmt(sum) + " (expected 1)");
}

// Declared in tidal/policy/fragmentation.h.
std::vector<FgdTask> TypicalTasks(std::span<const PodDemand> pods, double popularity_pct) {
  using Key = std::tuple<std::int64_t, int, int, std::string>;  // cpu, milli, gpus, models
  std::map<Key, int> counts;
  std::map<Key, std::vector<std::string>> models;
  for (const PodDemand& p : pods) {
    std::string joined;
    for (const auto& m : p.gpu_models) joined += (joined.empty() ? "" : "|") + m;
    const Key k{p.cpu_milli, p.gpu_count > 0 ? p.gpu_milli : 0, p.gpu_count, joined};
    ++counts[k];
    models.emplace(k, p.gpu_models);
  }
  std::vector<std::pair<Key, int>> sorted(counts.begin(), counts.end());
  // Most popular first; equal counts: the larger task first (a stable order).
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  const double total = static_cast<double>(pods.size());
  const double wanted = popularity_pct / 100.0 * total;
  double covered = 0;
  std::vector<FgdTask> out;
  for (const auto& [k, n] : sorted) {
    if (covered >= wanted) break;
    FgdTask t;
    t.cpu_milli = std::get<0>(k);
    t.gpu_milli = std::get<1>(k);
    t.gpus = std::get<2>(k);
    t.models = models[k];
    t.weight = n;
    covered += n;
    out.push_back(std::move(t));
  }
  for (auto& t : out) t.weight /= covered;
  return out;
}

}  // namespace tidal
