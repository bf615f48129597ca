#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "tidal/policy/config.h"

namespace tidal {

struct GpuFitArgs {
  // Above this many candidate GPUs the clique search is greedy instead of exhaustive.
  int exhaustive_search_limit = 16;
  // Multi-GPU pods that do not use NVLink may still be placed on linked GPUs;
  // false keeps NVLink cliques free for the pods that need them.
  bool prefer_nvlink_for_all = true;

  static GpuFitArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
