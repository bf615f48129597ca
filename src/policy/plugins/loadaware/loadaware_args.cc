#include "policy/plugins/loadaware/loadaware_args.h"

#include <cmath>

#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

LoadAwareArgs LoadAwareArgs::Parse(const YAML::Node& node, const std::string& path,
                                   ConfigErrors& errors) {
  LoadAwareArgs a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"weights", "unknownNodeScore"}, errors);
  ReadDouble(node, path, "unknownNodeScore", &a.unknown_node_score, errors);
  const std::string wp = Join(path, "weights");
  if (IsMap(node["weights"], wp, errors)) {
    CheckKeys(node["weights"], wp, {"gpuMemory", "nvlink", "io"}, errors);
    ReadDouble(node["weights"], wp, "gpuMemory", &a.weight_gpu_memory, errors);
    ReadDouble(node["weights"], wp, "nvlink", &a.weight_nvlink, errors);
    ReadDouble(node["weights"], wp, "io", &a.weight_io, errors);
  }
  return a;
}

void LoadAwareArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  const std::string wp = Join(path, "weights");
  auto unit = [&](double v, const char* key) {
    if (!(v >= 0 && v <= 1)) errors.Add(Join(wp, key), Fmt(v) + " is outside [0, 1]");
  };
  unit(weight_gpu_memory, "gpuMemory");
  unit(weight_nvlink, "nvlink");
  unit(weight_io, "io");
  const double sum = weight_gpu_memory + weight_nvlink + weight_io;
  if (std::fabs(sum - 1) > 1e-6) errors.Add(wp, "weights sum to " + Fmt(sum) + ", expected 1");
  if (!(unknown_node_score >= 0 && unknown_node_score <= 100))
    errors.Add(Join(path, "unknownNodeScore"), Fmt(unknown_node_score) + " is outside [0, 100]");
}

}  // namespace tidal
