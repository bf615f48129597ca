#pragma once
// Memory profiles for the simulator from the Alibaba GenAI per-pod GPU-memory
// series (`tidal traces genai-profiles`, docs/traces.md): each pod's first
// `points` × `step_s` seconds, resampled linearly on a fixed step and divided by
// its own peak over that window.
#include <string>
#include <vector>

#include "tidal/sim/spec.h"
#include "tidal/sim/traces/traces.h"

namespace tidal::sim::traces {

struct GenaiProfileOptions {
  double step_s = 60;
  int points = 60;      // samples kept per pod
  int min_points = 10;  // shorter series (or all-zero ones) are left out
};

std::vector<MemoryProfile> DeriveMemoryProfiles(const std::vector<PodUsage>& pods,
                                                const GenaiProfileOptions& options = {});

// The `memoryProfiles` file format read by LoadMemoryProfiles; `command` is
// written into it so the file says how to regenerate it.
std::string RenderMemoryProfilesYaml(const std::vector<MemoryProfile>& profiles,
                                     const std::string& source, const std::string& command);

}  // namespace tidal::sim::traces
