#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "tidal/policy/config.h"

namespace tidal {

struct RandomArgs {
  std::uint64_t seed = 42;

  static RandomArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
