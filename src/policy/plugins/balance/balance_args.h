#pragma once
#include <string>

#include <yaml-cpp/yaml.h>

#include "tidal/policy/config.h"

namespace tidal {

enum class BalanceMode { kSpread, kPack };

struct BalanceArgs {
  BalanceMode mode = BalanceMode::kSpread;
  // How the node's load is summarised: the same dimensions as loadaware.
  double weight_gpu_memory = 0.5;
  double weight_nvlink = 0.3;
  double weight_io = 0.2;

  static BalanceArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
