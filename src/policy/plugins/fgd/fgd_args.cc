#include "policy/plugins/fgd/fgd_args.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "tidal/policy/learned_workload.h"
#include "tidal/policy/milli_gpu.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

namespace {

// One integer of a list, reported at `path` when it is not one.
bool ReadIntValue(const YAML::Node& value, const std::string& path, int* out,
                  ConfigErrors& errors) {
  YAML::Node wrapped(YAML::NodeType::Map);
  wrapped["value"] = value;
  ConfigErrors local;
  ReadInt(wrapped, "", "value", out, local);
  if (local.empty() && value.IsScalar()) return true;
  errors.Add(path, "expected an integer");
  return false;
}

// `fillPlan: [{share: 810, used: [160, 110]}, ...]`: each share (1..999 milli, once)
// and the fill levels it may join (1..1000 − share).
FillPlan ReadFillPlan(const YAML::Node& node, const std::string& path, ConfigErrors& errors) {
  FillPlan plan;
  if (!node || (node.IsScalar() && node.Scalar() == "workload")) return plan;
  if (!node.IsSequence()) {
    errors.Add(path, "expected workload or a list of {share, used: [..], model}");
    return plan;
  }
  std::map<std::string, FillPlan> by_model;  // "": the entries that name no model
  std::set<std::pair<std::string, int>> seen;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (!IsMap(node[i], p, errors)) continue;
    CheckKeys(node[i], p, {"share", "used", "model"}, errors);
    int share = 0;
    ReadInt(node[i], p, "share", &share, errors);
    std::string model;
    ReadString(node[i], p, "model", &model, errors);
    if (share < 1 || share >= kMilliPerGpu) {
      errors.Add(Join(p, "share"), "must be in 1..999 (milli-GPU shared)");
      continue;
    }
    if (!seen.emplace(model, share).second) {
      errors.Add(Join(p, "share"), std::to_string(share) + " listed twice" +
                                       (model.empty() ? "" : " for model " + model));
      continue;
    }
    FillPlan& into = by_model[model];
    const YAML::Node used = node[i]["used"];
    if (!used || !used.IsSequence()) {
      errors.Add(Join(p, "used"), "expected a list of milli-GPU fill levels");
      continue;
    }
    for (std::size_t j = 0; j < used.size(); ++j) {
      const std::string u = Join(p, "used") + "[" + std::to_string(j) + "]";
      int level = 0;
      if (!ReadIntValue(used[j], u, &level, errors)) continue;
      if (level < 1 || level > kMilliPerGpu - share)
        errors.Add(u, std::to_string(level) + " (expected 1.." +
                          std::to_string(kMilliPerGpu - share) + ": the GPU's milli taken)");
      else
        into.Allow(share, level);
    }
  }
  if (by_model.contains("")) plan = std::move(by_model[""]);
  for (auto& [model, model_plan] : by_model)
    if (!model.empty()) plan.SetForModel(model, std::move(model_plan));
  return plan;
}

}  // namespace

FgdArgs FgdArgs::Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors) {
  FgdArgs a;
  // Without a target workload: one whole GPU per task, so a partly used GPU's free
  // share is the fragment.
  FgdArgs defaults{{FgdTask{0, 1, 1000, {}, 1.0}}};
  if (!node || node.IsNull()) return defaults;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path,
            {"tasks", "tieBreak", "scoreStep", "wholeGpuScoreStep", "onlyWithTidalDevicePlugin",
             "fillPlan"},
            errors);
  a.fill_plan = ReadFillPlan(node["fillPlan"], Join(path, "fillPlan"), errors);
  defaults.fill_plan = a.fill_plan;
  const YAML::Node plan = node["fillPlan"];
  a.fill_plan_of_workload = plan && plan.IsScalar() && plan.Scalar() == "workload";
  defaults.fill_plan_of_workload = a.fill_plan_of_workload;
  ReadBool(node, path, "onlyWithTidalDevicePlugin", &a.only_with_tidal_device_plugin, errors);
  defaults.only_with_tidal_device_plugin = a.only_with_tidal_device_plugin;
  ReadInt(node, path, "scoreStep", &a.score_step, errors);
  defaults.score_step = a.score_step;
  ReadInt(node, path, "wholeGpuScoreStep", &a.whole_gpu_score_step, errors);
  defaults.whole_gpu_score_step = a.whole_gpu_score_step;
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
  if (tasks.IsScalar() && tasks.Scalar() == "learned") {
    defaults.learned = true;
    return defaults;
  }
  if (!tasks.IsSequence()) {
    errors.Add(tpath, "expected learned or a list of {cpuMilli, gpus, gpuMilli, models, weight}");
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
  if (score_step < 1 || score_step > 50) errors.Add(Join(path, "scoreStep"), "must be in 1..50");
  if (whole_gpu_score_step < 0 || whole_gpu_score_step > 50)
    errors.Add(Join(path, "wholeGpuScoreStep"), "must be in 0..50 (0: scoreStep)");
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
  TaskTypeLearner counts;
  for (const PodDemand& p : pods) counts.Observe(p);
  return counts.Tasks(popularity_pct);
}

TaskTypeLearner::TaskTypeLearner(double half_life_pods, std::size_t max_types)
    : growth_(half_life_pods > 0 ? std::exp2(1.0 / half_life_pods) : 1.0),
      max_types_(std::max<std::size_t>(max_types, 1)) {}

void TaskTypeLearner::Observe(const PodDemand& pod) {
  std::string joined;
  for (const auto& m : pod.gpu_models) joined += (joined.empty() ? "" : "|") + m;
  Key key{pod.cpu_milli, pod.gpu_count > 0 ? pod.gpu_milli : 0, pod.gpu_count, std::move(joined)};
  auto it = types_.find(key);
  if (it == types_.end()) {
    if (types_.size() >= max_types_) ForgetLightest();
    it = types_.emplace(std::move(key), Learned{pod.gpu_models, 0}).first;
  }
  // Decay without touching every type: each pod weighs growth_ times the one
  // before it, and the weights are scaled down together long before overflow.
  it->second.weight += next_weight_;
  ++pods_seen_;
  next_weight_ *= growth_;
  if (next_weight_ > 1e200) {
    for (auto& [k, t] : types_) t.weight /= next_weight_;
    next_weight_ = 1;
  }
}

void TaskTypeLearner::ForgetLightest() {
  auto lightest = types_.begin();
  for (auto it = types_.begin(); it != types_.end(); ++it)
    if (it->second.weight < lightest->second.weight) lightest = it;
  if (lightest != types_.end()) types_.erase(lightest);
}

std::vector<FgdTask> TaskTypeLearner::Tasks(double popularity_pct) const {
  std::vector<std::pair<const Key*, const Learned*>> sorted;
  double total = 0;
  for (const auto& [k, t] : types_) {
    sorted.emplace_back(&k, &t);
    total += t.weight;
  }
  // The heaviest first; equal weights: the larger task first (a stable order).
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second->weight != b.second->weight ? a.second->weight > b.second->weight
                                                : *a.first > *b.first;
  });
  const double wanted = popularity_pct / 100.0 * total;
  double covered = 0;
  std::vector<FgdTask> out;
  for (const auto& [k, t] : sorted) {
    if (covered >= wanted) break;
    FgdTask task;
    task.cpu_milli = std::get<0>(*k);
    task.gpu_milli = std::get<1>(*k);
    task.gpus = std::get<2>(*k);
    task.models = t->models;
    task.weight = t->weight;
    covered += t->weight;
    out.push_back(std::move(task));
  }
  for (auto& task : out) task.weight /= covered;
  return out;
}

namespace {

bool FitsOnePod(const FgdTask& task, const NodeState& node) {
  if (CpuLeft(node) < task.cpu_milli) return false;
  if (task.gpus == 0) return true;
  if (!ModelAccepted(task.models, NodeGpuModel(node))) return false;
  int free[kMaxGpusPerNode];
  const std::size_t n = node.MilliFree(free);
  int fitting_gpus = 0;
  for (std::size_t i = 0; i < n; ++i) fitting_gpus += free[i] >= task.gpu_milli ? 1 : 0;
  return fitting_gpus >= task.gpus;
}

// Each task's weight divided by its supply (the nodes it fits on, at least
// one)^exponent, re-normalised.
std::vector<FgdTask> Scaled(std::vector<FgdTask> tasks, std::span<const std::size_t> supply,
                            double exponent) {
  if (exponent == 0 || tasks.empty()) return tasks;
  double total = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    FgdTask& task = tasks[i];
    task.weight /= std::pow(static_cast<double>(std::max<std::size_t>(1, supply[i])), exponent);
    total += task.weight;
  }
  if (total > 0)
    for (FgdTask& task : tasks) task.weight /= total;
  return tasks;
}

}  // namespace

std::size_t NodesFitting(const FgdTask& task, std::span<const NodeState* const> nodes) {
  std::size_t fitting_nodes = 0;
  for (const NodeState* node : nodes) fitting_nodes += FitsOnePod(task, *node) ? 1 : 0;
  return fitting_nodes;
}

std::vector<std::size_t> NodesFittingEach(std::span<const FgdTask> tasks,
                                          std::span<const NodeState* const> nodes) {
  std::vector<std::size_t> fitting(tasks.size(), 0);
  if (tasks.empty()) return fitting;
  const TaskModelTable models(tasks);
  for (const NodeState* node : nodes) {
    const std::int64_t cpu_left = CpuLeft(*node);
    const std::span<const char> accepted = models.Accepted(NodeGpuModel(*node));
    int free[kMaxGpusPerNode];
    const std::size_t n = node->MilliFree(free);
    std::sort(free, free + n, std::greater<>());  // free[k - 1]: the k-th most free
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const FgdTask& t = tasks[i];
      if (cpu_left < t.cpu_milli) continue;
      const bool fits =
          t.gpus == 0 || (accepted[i] && t.gpus > 0 && static_cast<std::size_t>(t.gpus) <= n &&
                          free[t.gpus - 1] >= t.gpu_milli);
      fitting[i] += fits ? 1 : 0;
    }
  }
  return fitting;
}

std::vector<FgdTask> WeighByScarcity(std::vector<FgdTask> tasks,
                                     std::span<const NodeState* const> nodes, double exponent) {
  if (exponent == 0 || tasks.empty()) return tasks;
  const std::vector<std::size_t> fitting = NodesFittingEach(tasks, nodes);
  return Scaled(std::move(tasks), fitting, exponent);
}

TargetWorkload::TargetWorkload(std::vector<FgdTask> task_types)
    : tasks(std::move(task_types)), models(tasks), shares(tasks) {
  one_whole_gpu = std::all_of(tasks.begin(), tasks.end(), [](const FgdTask& t) {
    return t.gpus == 1 && t.gpu_milli == kMilliPerGpu && t.cpu_milli == 0 && t.models.empty();
  });
}

WorkloadLearner::WorkloadLearner(double half_life_pods, std::size_t max_types,
                                 double popularity_pct, double scarcity_exponent)
    : learner_(half_life_pods, max_types),
      popularity_pct_(popularity_pct),
      scarcity_exponent_(scarcity_exponent) {}

void WorkloadLearner::Observe(const PodDemand& pod) {
  if (!Learns(pod)) return;
  std::lock_guard<std::mutex> lock(mu_);
  learner_.Observe(pod);
  Publish();
}

WorkloadLearner::TaskKey WorkloadLearner::KeyOf(const FgdTask& task) {
  return {task.cpu_milli, task.gpus, task.gpu_milli, task.models};
}

void WorkloadLearner::Supply(std::span<const NodeState* const> nodes) {
  std::vector<FgdTask> tasks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks = learner_.Tasks(popularity_pct_);
  }
  // Counted and planned outside the lock: the count grows with the cluster.
  std::map<TaskKey, std::size_t> supply;
  if (scarcity_exponent_ != 0) {
    const std::vector<std::size_t> fitting = NodesFittingEach(tasks, nodes);
    for (std::size_t i = 0; i < tasks.size(); ++i) supply[KeyOf(tasks[i])] = fitting[i];
    tasks = Scaled(std::move(tasks), fitting, scarcity_exponent_);
  }
  auto plan = std::make_shared<const FillPlan>(PlanFills(tasks));
  std::lock_guard<std::mutex> lock(mu_);
  fill_plan_ = std::move(plan);
  if (scarcity_exponent_ != 0) {
    supply_ = std::move(supply);
    supplied_nodes_ = nodes.size();
    supplied_ = true;
  }
  if (learner_.pods_seen() > 0) Publish();
}

void WorkloadLearner::Publish() {
  std::vector<FgdTask> tasks = learner_.Tasks(popularity_pct_);
  if (supplied_) {
    std::vector<std::size_t> supply;
    supply.reserve(tasks.size());
    for (const FgdTask& task : tasks) {
      const auto it = supply_.find(KeyOf(task));
      supply.push_back(it == supply_.end() ? supplied_nodes_ : it->second);
    }
    tasks = Scaled(std::move(tasks), supply, scarcity_exponent_);
  }
  auto current = std::make_shared<TargetWorkload>(std::move(tasks));
  current->fill_plan = fill_plan_;
  current_ = std::move(current);
}

std::shared_ptr<const TargetWorkload> WorkloadLearner::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::uint64_t WorkloadLearner::pods_seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return learner_.pods_seen();
}

WorkloadLearnerUse UseOfWorkloadLearner(const PolicyConfig& config) {
  WorkloadLearnerUse use;
  for (const PluginConfig& p : config.plugins) {
    if (!p.enabled || p.name != "fgd") continue;
    ConfigErrors ignored;  // the config was validated when it was loaded
    const FgdArgs args = FgdArgs::Parse(p.ArgsNode(), "fgd", ignored);
    use.workload = use.workload || args.learned;
    use.gpu_choices = use.gpu_choices || args.only_with_tidal_device_plugin;
  }
  return use;
}

}  // namespace tidal
