#include "policy/plugins/random/random_args.h"

#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

RandomArgs RandomArgs::Parse(const YAML::Node& node, const std::string& path,
                             ConfigErrors& errors) {
  RandomArgs a;
  if (!node || node.IsNull()) return a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"seed"}, errors);
  int seed = 42;
  ReadInt(node, path, "seed", &seed, errors);
  if (seed < 0) errors.Add(Join(path, "seed"), std::to_string(seed) + " (expected a number >= 0)");
  a.seed = static_cast<std::uint64_t>(seed < 0 ? 0 : seed);
  return a;
}

void RandomArgs::Validate(const std::string&, ConfigErrors&) const {}

}  // namespace tidal
