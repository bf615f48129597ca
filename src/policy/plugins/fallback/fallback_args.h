#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "tidal/core/types.h"
#include "tidal/policy/config.h"

namespace tidal {

struct FallbackArgs {
  // 1: the metrics source just failed; 2: it has been failing for longer than
  // fallback.stage2After (docs/design.md#fallback).
  int stage = 1;
  // Stage 2 admits only nodes carrying every one of these labels.
  Labels golden_pool{{"tidal.io/pool", "golden"}};

  static FallbackArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
