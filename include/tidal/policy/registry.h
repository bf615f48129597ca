#pragma once
// The plugin registry: one line per plugin in registry.cc.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tidal/policy/config.h"
#include "tidal/policy/plugin.h"

namespace tidal {

// Builds a plugin from its args node (null: defaults); reports every problem
// under `path` (e.g. "plugins.balance.args") and returns null if any.
using PluginFactory = std::function<std::unique_ptr<Plugin>(
    const YAML::Node& args, const std::string& path, ConfigErrors& errors)>;

struct PluginEntry {
  std::string name;
  std::string summary;
  PluginFactory make;
  bool default_enabled = false;  // part of Tidal's default profile
  double default_weight = 1;
  // Its args in the default profile (YAML text; empty: the plugin's defaults). A
  // config that names the plugin gives its own args.
  std::string default_args;
};

const std::vector<PluginEntry>& Registry();
const PluginEntry* FindPlugin(const std::string& name);

}  // namespace tidal
