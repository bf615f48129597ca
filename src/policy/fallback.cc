#include "tidal/policy/fallback.h"

#include "policy/plugins/fallback/fallback.h"
#include "tidal/policy/registry.h"

namespace tidal {

Runner MakeFallbackRunner(const PolicyConfig& config, int stage) {
  std::vector<Runner::WeightedPlugin> plugins;
  ConfigErrors errors;
  for (const auto& pc : config.plugins) {
    if (!pc.enabled || pc.name == "fallback") continue;
    const PluginEntry* entry = FindPlugin(pc.name);
    if (!entry) {
      errors.Add("plugins." + pc.name, "unknown plugin");
      continue;
    }
    auto plugin = entry->make(pc.ArgsNode(), "plugins." + pc.name + ".args", errors);
    if (plugin) plugins.push_back({std::move(plugin), pc.weight, /*use_score=*/false});
  }
  FallbackArgs args;
  args.stage = stage;
  args.golden_pool = config.fallback.golden_pool;
  args.Validate("fallback", errors);
  if (!errors.empty()) throw InputError{errors.Joined()};
  plugins.push_back({std::make_unique<Fallback>(std::move(args)), 1, true});
  return Runner(config, std::move(plugins));
}

}  // namespace tidal
