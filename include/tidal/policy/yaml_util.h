#pragma once
// Typed reads from YAML nodes that report problems with their field path.
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

#include "tidal/policy/config.h"

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
void ReadString(const YAML::Node& node, const std::string& path, const char* key,
                std::string* out, ConfigErrors& errors);
void ReadDuration(const YAML::Node& node, const std::string& path, const char* key, TimeMs* out,
                  ConfigErrors& errors);
void ReadBytes(const YAML::Node& node, const std::string& path, const char* key, Bytes* out,
               ConfigErrors& errors);
bool IsMap(const YAML::Node& node, const std::string& path, ConfigErrors& errors);

std::string Fmt(double v);  // shortest round-trip text for messages

}  // namespace tidal::yamlutil
