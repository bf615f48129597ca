#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "tidal/policy/config.h"
#include "tidal/policy/milli_gpu.h"

namespace tidal {

struct MilliGpuArgs {
  GpuPick pick = GpuPick::kBestFit;  // which GPU a sharing pod gets
  std::uint64_t seed = 0;            // for pick random: drawn from seed, pod and node

  static MilliGpuArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
