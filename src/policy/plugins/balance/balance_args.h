#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "tidal/policy/config.h"
#include "tidal/policy/thresholds.h"

namespace tidal {

enum class BalanceMode { kSpread, kPack };

struct BalanceArgs {
  BalanceMode mode = BalanceMode::kSpread;
  // How the node's load is summarised: the same dimensions as loadaware.
  DimensionWeights weights;

  static BalanceArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
