#pragma once
// Test helpers for the agent: sample lookup, temporary directories and files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "testing/process.h"
#include "tidal/agent/metrics.h"

namespace tidal::agent::testing {

// The value of the first sample of `name` whose labels include all of `want`.
inline std::optional<double> Find(const MetricSet& set, std::string_view name,
                                  const LabelPairs& want = {}) {
  for (const MetricFamily& f : set.families()) {
    if (f.name != name) continue;
    for (const Sample& s : f.samples) {
      bool all = true;
      for (const auto& w : want) {
        bool hit = false;
        for (const auto& l : s.labels) hit = hit || l == w;
        all = all && hit;
      }
      if (all) return s.value;
    }
  }
  return std::nullopt;
}

inline std::size_t Count(const MetricSet& set, std::string_view name) {
  for (const MetricFamily& f : set.families())
    if (f.name == name) return f.samples.size();
  return 0;
}

using tidal::testing::ReadFile;
using tidal::testing::TempDir;

}  // namespace tidal::agent::testing
