#pragma once
// Thresholds per dimension and their resolution for one pod (docs/design.md#thresholds, #tenants).
#include <optional>
#include <string>

namespace tidal {

struct ThresholdPair {
  double warn = 0;
  double reject = 0;
  friend bool operator==(const ThresholdPair&, const ThresholdPair&) = default;
};

struct Thresholds {
  ThresholdPair gpu_memory{0.70, 0.85};
  ThresholdPair nvlink{0.30, 0.60};
  ThresholdPair await_ms{40, 70};
  friend bool operator==(const Thresholds&, const Thresholds&) = default;
};

// What the filter and score compare against, after the safety margin, the decay
// slope, the namespace's thresholds and the pod's annotation.
struct EffectiveThresholds {
  ThresholdPair gpu_memory{0.70, 0.82};
  ThresholdPair nvlink{0.30, 0.57};
  ThresholdPair await_ms{40, 67.9};
};

// How the three dimensions combine (loadaware's penalty, balance's load); they sum to 1.
struct DimensionWeights {
  double gpu_memory = 0.5;
  double nvlink = 0.3;
  double io = 0.2;
  double Combine(double mem, double nvl, double io_value) const {
    return gpu_memory * mem + nvlink * nvl + io * io_value;
  }
};

// p_d = clamp((x − warn) / (reject − warn), 0, 1); a degenerate band is a step.
inline double BandPosition(double x, const ThresholdPair& t) {
  if (x <= t.warn) return 0;
  if (x >= t.reject) return 1;
  const double width = t.reject - t.warn;
  return width > 0 ? (x - t.warn) / width : 1;
}

}  // namespace tidal
