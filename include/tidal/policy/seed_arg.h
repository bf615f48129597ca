#pragma once
// A plugin's `seed` arg (random, milligpu): any 64-bit seed, the range of the
// simulators' seeds (--seed, --seeds), which reach the plugins through their
// YAML args. Header-only: two plugins read it.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <string>

#include "tidal/policy/config.h"
#include "tidal/policy/yaml_util.h"

namespace tidal::yamlutil {

// Reads node[key] into *out when present: a decimal integer in 0..2^64−1.
inline void ReadSeed(const YAML::Node& node, const std::string& path, const char* key,
                     std::uint64_t* out, ConfigErrors& errors) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return;
  const std::string text = v.IsScalar() ? v.Scalar() : "";
  const char* end = text.data() + text.size();
  std::uint64_t seed = 0;
  const auto [at, ec] = std::from_chars(text.data(), end, seed);
  if (ec == std::errc{} && at == end) {
    *out = seed;
    return;
  }
  const bool negative = text.size() > 1 && text[0] == '-' &&
                        text.find_first_not_of("0123456789", 1) == std::string::npos;
  if (negative)
    errors.Add(Join(path, key), text + " (expected a number >= 0)");
  else
    errors.Add(Join(path, key), "expected an integer in 0..18446744073709551615");
}

}  // namespace tidal::yamlutil
