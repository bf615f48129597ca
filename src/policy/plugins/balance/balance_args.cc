#include "policy/plugins/balance/balance_args.h"

#include <cmath>

#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

BalanceArgs BalanceArgs::Parse(const YAML::Node& node, const std::string& path,
                               ConfigErrors& errors) {
  BalanceArgs a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"mode", "weights"}, errors);
  std::string mode = "spread";
  ReadString(node, path, "mode", &mode, errors);
  if (mode == "spread")
    a.mode = BalanceMode::kSpread;
  else if (mode == "pack")
    a.mode = BalanceMode::kPack;
  else
    errors.Add(Join(path, "mode"), "\"" + mode + "\" (expected spread or pack)");
  ReadWeights(node["weights"], Join(path, "weights"), &a.weights, errors);
  return a;
}

void BalanceArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  ValidateWeights(weights, Join(path, "weights"), errors);
}

}  // namespace tidal
