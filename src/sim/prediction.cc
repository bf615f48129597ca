#include "tidal/sim/prediction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tidal/policy/cycle.h"
#include "tidal/policy/forecast.h"
#include "tidal/policy/memory_learner.h"

namespace tidal::sim {

PredictionReport RunPrediction(const std::vector<traces::PodUsage>& pods,
                               const PolicyConfig& config) {
  PredictionReport r;
  r.pods = static_cast<int>(pods.size());
  const ForecastConfig& f = config.load_forecast;
  double err_holt = 0, err_last = 0;
  std::vector<double> steps;
  for (const traces::PodUsage& pod : pods) {
    HoltSeries holt(f.alpha, f.beta, f.max_gap_ms);
    for (std::size_t i = 0; i < pod.memory.size(); ++i) {
      const TimeMs t = static_cast<TimeMs>(std::llround(pod.memory[i].t_s * 1000));
      const double x = pod.memory[i].value;
      if (i > 0 && x > 0) {
        const auto predicted = holt.Predict(t);
        const double last = pod.memory[i - 1].value;
        // Across a gap longer than maxGap there is no trend to extend: the last sample.
        const double h = predicted && t - holt.last_ms() <= f.max_gap_ms ? *predicted : last;
        err_holt += std::fabs(h - x) / x;
        err_last += std::fabs(last - x) / x;
        ++r.points;
        steps.push_back(pod.memory[i].t_s - pod.memory[i - 1].t_s);
      }
      holt.Observe(t, x);
    }
  }
  if (r.points > 0) {
    r.mape_holt_pct = 100 * err_holt / r.points;
    r.mape_last_pct = 100 * err_last / r.points;
    std::nth_element(steps.begin(), steps.begin() + static_cast<long>(steps.size() / 2),
                     steps.end());
    r.median_step_s = steps[steps.size() / 2];
  }

  // The serving pods are one workload: one key, learned in arrival order.
  std::vector<const traces::PodUsage*> order;
  for (const auto& p : pods)
    if (!p.memory.empty()) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->memory.front().t_s < b->memory.front().t_s;
  });
  MemoryLearningConfig lc = config.memory_learning;
  MemoryLearner learner(lc);
  PodDemand demand;
  demand.namespace_name = "genai";
  demand.images = {"stable-diffusion-serving"};
  demand.load_type = LoadType::kInference;
  demand.gpu_count = 1;
  const std::string key = WorkloadKey(demand);
  r.rule_bytes = EstimateMemoryNeed(config.memory_estimate, demand);
  double err_learned = 0, err_rule = 0;
  int under_learned = 0, under_rule = 0;
  for (const traces::PodUsage* p : order) {
    double peak = 0;
    for (const auto& s : p->memory) peak = std::max(peak, s.value);
    if (peak <= 0) continue;
    const auto learned = learner.Estimate(key);
    if (!learned) ++r.cold;
    const double e_learned = static_cast<double>(learned ? *learned : r.rule_bytes);
    const double e_rule = static_cast<double>(r.rule_bytes);
    err_learned += std::fabs(e_learned - peak) / peak;
    err_rule += std::fabs(e_rule - peak) / peak;
    under_learned += e_learned < peak ? 1 : 0;
    under_rule += e_rule < peak ? 1 : 0;
    ++r.estimated;
    learner.Observe(key, static_cast<Bytes>(peak));
  }
  if (r.estimated > 0) {
    r.mape_learned_pct = 100 * err_learned / r.estimated;
    r.mape_rule_pct = 100 * err_rule / r.estimated;
    r.under_learned_pct = 100.0 * under_learned / r.estimated;
    r.under_rule_pct = 100.0 * under_rule / r.estimated;
  }
  return r;
}

std::string RenderPredictionTable(const PredictionReport& r) {
  std::string out;
  out += fmt::format(
      "Forecast of per-pod GPU memory, one sample ahead ({} pods, {} points, median "
      "step {:.0f} s)\n",
      r.pods, r.points, r.median_step_s);
  out += "| forecast | MAPE |\n| --- | ---: |\n";
  out += fmt::format("| Holt (loadForecast) | {:.2f} % |\n", r.mape_holt_pct);
  out += fmt::format("| last sample (reactive) | {:.2f} % |\n", r.mape_last_pct);
  out += fmt::format("\nEstimate of each pod's peak before it runs ({} pods, {} cold)\n",
                     r.estimated, r.cold);
  out += "| estimate | MAPE | below the real peak |\n| --- | ---: | ---: |\n";
  out += fmt::format("| learned (memoryLearning) | {:.1f} % | {:.1f} % |\n", r.mape_learned_pct,
                     r.under_learned_pct);
  out +=
      fmt::format("| rule, INFERENCE {:.0f} GiB | {:.1f} % | {:.1f} % |\n",
                  static_cast<double>(r.rule_bytes) / (1 << 30), r.mape_rule_pct, r.under_rule_pct);
  return out;
}

std::string RenderPredictionJson(const PredictionReport& r) {
  nlohmann::json j;
  j["experiment"] = "prediction";
  j["forecast"] = {{"pods", r.pods},
                   {"points", r.points},
                   {"median_step_s", r.median_step_s},
                   {"mape_holt_pct", r.mape_holt_pct},
                   {"mape_last_pct", r.mape_last_pct}};
  j["memory_estimate"] = {{"pods", r.estimated},
                          {"cold", r.cold},
                          {"mape_learned_pct", r.mape_learned_pct},
                          {"mape_rule_pct", r.mape_rule_pct},
                          {"under_learned_pct", r.under_learned_pct},
                          {"under_rule_pct", r.under_rule_pct},
                          {"rule_bytes", r.rule_bytes}};
  return j.dump(2) + "\n";
}

}  // namespace tidal::sim
