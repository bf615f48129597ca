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
  ReadWeights(node["weights"], Join(path, "weights"), &a.weights, errors);
  return a;
}

void LoadAwareArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  ValidateWeights(weights, Join(path, "weights"), errors);
  if (!(unknown_node_score >= 0 && unknown_node_score <= 100))
    errors.Add(Join(path, "unknownNodeScore"), Fmt(unknown_node_score) + " is outside [0, 100]");
}

}  // namespace tidal
