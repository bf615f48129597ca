#include "policy/plugins/gpufit/gpufit_args.h"

#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

GpuFitArgs GpuFitArgs::Parse(const YAML::Node& node, const std::string& path,
                             ConfigErrors& errors) {
  GpuFitArgs a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"exhaustiveSearchLimit", "preferNvlinkForAll"}, errors);
  ReadInt(node, path, "exhaustiveSearchLimit", &a.exhaustive_search_limit, errors);
  ReadBool(node, path, "preferNvlinkForAll", &a.prefer_nvlink_for_all, errors);
  return a;
}

void GpuFitArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  if (exhaustive_search_limit < 1 || exhaustive_search_limit > 24)
    errors.Add(Join(path, "exhaustiveSearchLimit"),
               std::to_string(exhaustive_search_limit) + " is outside [1, 24]");
}

}  // namespace tidal
