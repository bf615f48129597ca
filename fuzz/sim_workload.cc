// The simulator's workload files: only InputError comes out of LoadWorkloadSpec,
// and a loaded workload has ranges with low <= high and positive durations.
#include <string>

#include "check.h"
#include "tidal/core/status.h"
#include "tidal/sim/spec.h"
#include "yaml_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::optional<YAML::Node> parsed = tidal::fuzz::AsYaml(data, size);
  if (!parsed) return 0;
  const YAML::Node& root = *parsed;
  tidal::sim::WorkloadSpec workload;
  try {
    workload = tidal::sim::LoadWorkloadSpec(root, "workload.yaml");
  } catch (const tidal::InputError& e) {
    TIDAL_FUZZ_CHECK(e.message.rfind("workload.yaml", 0) == 0, "errors name the file");
    return 0;
  }
  for (const tidal::sim::TaskClass& t : workload.classes) {
    TIDAL_FUZZ_CHECK(t.count >= 0 && t.gpus >= 0, "counts are not negative");
    TIDAL_FUZZ_CHECK(t.memory_peak.lo <= t.memory_peak.hi, "memory range low <= high");
    TIDAL_FUZZ_CHECK(t.duration_seconds.lo > 0, "durations are positive");
  }
  return 0;
}
