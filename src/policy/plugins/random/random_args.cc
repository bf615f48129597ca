#include "policy/plugins/random/random_args.h"

#include "tidal/policy/seed_arg.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

RandomArgs RandomArgs::Parse(const YAML::Node& node, const std::string& path,
                             ConfigErrors& errors) {
  RandomArgs a;
  if (!node || node.IsNull()) return a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"seed"}, errors);
  ReadSeed(node, path, "seed", &a.seed, errors);
  return a;
}

void RandomArgs::Validate(const std::string&, ConfigErrors&) const {}

}  // namespace tidal
