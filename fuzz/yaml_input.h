#pragma once
// The fuzz input as a YAML document, for the targets of YAML loaders: nothing
// when yaml-cpp refuses it (its syntax errors are the loaders' callers' to report).
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "check.h"

namespace tidal::fuzz {

inline std::optional<YAML::Node> AsYaml(const std::uint8_t* data, std::size_t size) {
  try {
    return YAML::Load(std::string(AsText(data, size)));
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

}  // namespace tidal::fuzz
