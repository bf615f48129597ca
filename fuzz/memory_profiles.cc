// Memory-profile files (memoryProfiles:, `tidal traces genai-profiles`): only
// InputError comes out of LoadMemoryProfiles, and what loads is usable: shares in
// [0, 1], a positive step, and At() a share for any time.
#include <cmath>
#include <string>

#include "check.h"
#include "tidal/core/status.h"
#include "tidal/sim/spec.h"
#include "yaml_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::optional<YAML::Node> parsed = tidal::fuzz::AsYaml(data, size);
  if (!parsed) return 0;
  const YAML::Node& root = *parsed;
  std::vector<tidal::sim::MemoryProfile> profiles;
  try {
    profiles = tidal::sim::LoadMemoryProfiles(root, "profiles.yaml");
  } catch (const tidal::InputError& e) {
    TIDAL_FUZZ_CHECK(e.message.rfind("profiles.yaml", 0) == 0, "errors name the file");
    return 0;
  }
  TIDAL_FUZZ_CHECK(!profiles.empty(), "a loaded file has profiles");
  for (const auto& p : profiles) {
    TIDAL_FUZZ_CHECK(p.step_s > 0 && !p.share.empty(), "a step and at least one value");
    for (double t : {0.0, 0.5 * p.step_s, 7.25 * p.step_s, 1e9}) {
      const double v = p.At(t);
      TIDAL_FUZZ_CHECK(std::isfinite(v) && v >= 0 && v <= 1, "a share in [0, 1] at any time");
    }
  }
  return 0;
}
