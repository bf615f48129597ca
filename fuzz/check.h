#pragma once
// Shared by the fuzz targets: invariant checks that abort (libFuzzer then saves
// the input as a crash), and the input as text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

// Not assert(): the check must hold in every build type.
#define TIDAL_FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz invariant failed: %s [%s] at %s:%d\n", what, #cond, __FILE__, \
                   __LINE__);                                                                  \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace tidal::fuzz {

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `text` at the first occurrence of `sep`: {before, after}; all of it before when absent.
inline std::pair<std::string_view, std::string_view> SplitOnce(std::string_view text,
                                                               std::string_view sep) {
  const std::size_t at = text.find(sep);
  if (at == std::string_view::npos) return {text, {}};
  return {text.substr(0, at), text.substr(at + sep.size())};
}

}  // namespace tidal::fuzz
