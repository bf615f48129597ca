#pragma once
// Typed reads from YAML nodes that report problems with their field path.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "tidal/policy/config.h"
#include "tidal/policy/thresholds.h"

namespace tidal::yamlutil {

inline std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// Reports keys of `node` that are not in `known` (typos must not pass silently).
void CheckKeys(const YAML::Node& node, const std::string& path,
               std::initializer_list<const char*> known, ConfigErrors& errors);

// Reads node[key] into *out when present; reports a type error otherwise.
void ReadDouble(const YAML::Node& node, const std::string& path, const char* key, double* out,
                ConfigErrors& errors);
void ReadInt(const YAML::Node& node, const std::string& path, const char* key, int* out,
             ConfigErrors& errors);
void ReadBool(const YAML::Node& node, const std::string& path, const char* key, bool* out,
              ConfigErrors& errors);
// Adds "path: "text" is not valid UTF-8 text" and returns false unless text is
// UTF-8: YAML is Unicode, and other bytes would not survive check-config's dump.
bool CheckUtf8(const std::string& text, const std::string& path, ConfigErrors& errors);
void ReadString(const YAML::Node& node, const std::string& path, const char* key, std::string* out,
                ConfigErrors& errors);
void ReadDuration(const YAML::Node& node, const std::string& path, const char* key, TimeMs* out,
                  ConfigErrors& errors);
void ReadBytes(const YAML::Node& node, const std::string& path, const char* key, Bytes* out,
               ConfigErrors& errors);
bool IsMap(const YAML::Node& node, const std::string& path, ConfigErrors& errors);

std::string Fmt(double v);

// A label map ({key: value}); a value that is not a scalar is reported, not read as "".
void ReadLabels(const YAML::Node& node, const std::string& path, Labels* out, ConfigErrors& errors);

// A plugin's `weights: {gpuMemory, nvlink, io}`: each in [0, 1], summing to 1.
void ReadWeights(const YAML::Node& node, const std::string& path, DimensionWeights* out,
                 ConfigErrors& errors);
void ValidateWeights(const DimensionWeights& w, const std::string& path, ConfigErrors& errors);

// The one factory shape: parse the args, validate them, build the plugin, or
// report every problem and return null.
template <class PluginT, class ArgsT>
std::unique_ptr<PluginT> BuildFromArgs(const YAML::Node& node, const std::string& path,
                                       ConfigErrors& errors) {
  ConfigErrors local;
  ArgsT args = ArgsT::Parse(node, path, local);
  args.Validate(path, local);
  errors.Merge(local);
  if (!local.empty()) return nullptr;
  return std::make_unique<PluginT>(args);
}  // shortest round-trip text for messages

}  // namespace tidal::yamlutil
