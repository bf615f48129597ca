#pragma once
// `tidal simulate --experiment prediction`: how well the forecast and the
// learned memory estimate (docs/design.md#prediction) predict real usage, on the Alibaba GenAI
// per-pod GPU memory series (one sample a minute per serving pod).
#include <string>
#include <vector>

#include "tidal/policy/config.h"
#include "tidal/sim/traces/traces.h"

namespace tidal::sim {

struct PredictionReport {
  // Forecast: each pod's memory one sample ahead (the next sample is about a
  // minute later: the metrics lag plus a start-up), Holt against the last sample.
  int pods = 0;
  int points = 0;            // predictions scored (the next sample is non-zero)
  double median_step_s = 0;  // the forecast horizon this trace gives
  double mape_holt_pct = 0;
  double mape_last_pct = 0;
  // Estimate of each pod's peak before it runs, in order of the pods' first
  // samples: learned from the earlier pods' peaks (one workload: one serving
  // system) or the static rule (docs/design.md#memory-estimate) for an undeclared INFERENCE pod.
  int estimated = 0;
  int cold = 0;  // pods estimated by the rule because fewer than minSamples peaks existed
  double mape_learned_pct = 0;
  double mape_rule_pct = 0;
  double under_learned_pct = 0;  // share of pods whose estimate was below their real peak
  double under_rule_pct = 0;
  Bytes rule_bytes = 0;
};

PredictionReport RunPrediction(const std::vector<traces::PodUsage>& pods,
                               const PolicyConfig& config);
std::string RenderPredictionTable(const PredictionReport& r);
std::string RenderPredictionJson(const PredictionReport& r);

}  // namespace tidal::sim
