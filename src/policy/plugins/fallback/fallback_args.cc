#include "policy/plugins/fallback/fallback_args.h"

#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

FallbackArgs FallbackArgs::Parse(const YAML::Node& node, const std::string& path,
                                 ConfigErrors& errors) {
  FallbackArgs a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"stage", "goldenPool"}, errors);
  ReadInt(node, path, "stage", &a.stage, errors);
  if (node["goldenPool"]) {
    a.golden_pool.clear();
    ReadLabels(node["goldenPool"], Join(path, "goldenPool"), &a.golden_pool, errors);
  }
  return a;
}

void FallbackArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  if (stage != 1 && stage != 2)
    errors.Add(Join(path, "stage"), std::to_string(stage) + " (expected 1 or 2)");
  if (stage == 2 && golden_pool.empty())
    errors.Add(Join(path, "goldenPool"),
               "empty (stage 2 needs a label selector for the golden pool)");
}

}  // namespace tidal
