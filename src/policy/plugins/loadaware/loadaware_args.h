#pragma once
#include <string>

#include <yaml-cpp/yaml.h>

#include "tidal/policy/config.h"

namespace tidal {

struct LoadAwareArgs {
  // penalty = gpuMemory·p_mem + nvlink·p_nvl + io·p_io; the weights sum to 1.
  double weight_gpu_memory = 0.5;
  double weight_nvlink = 0.3;
  double weight_io = 0.2;
  // Score of a node whose metrics are missing or old: schedulable, at a penalty.
  double unknown_node_score = 50;

  static LoadAwareArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
