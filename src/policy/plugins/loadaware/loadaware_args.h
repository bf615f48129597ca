#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "tidal/policy/config.h"
#include "tidal/policy/thresholds.h"

namespace tidal {

struct LoadAwareArgs {
  // penalty = gpuMemory·p_mem + nvlink·p_nvl + io·p_io; the weights sum to 1.
  DimensionWeights weights;
  // Score of a node whose metrics are missing or old: schedulable, at a penalty.
  double unknown_node_score = 50;

  static LoadAwareArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
