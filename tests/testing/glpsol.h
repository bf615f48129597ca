#pragma once
// Solves an LP with glpsol (glpk-utils, installed by scripts/install-deps.sh) in a
// test: the LP text in, the file glpsol writes with `output` out ("-o" for its
// report, "-w" for the solution), nullopt when glpsol fails or is missing.
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace tidal::testing {

inline std::optional<std::string> RunGlpsol(const std::string& lp, const char* output) {
  char dir[] = "/tmp/tidal-glpsol-XXXXXX";
  if (!mkdtemp(dir)) return std::nullopt;
  const std::string model = std::string(dir) + "/m.lp", result = std::string(dir) + "/r.txt";
  std::ofstream(model) << lp;
  const int status = std::system(
      ("glpsol --lp '" + model + "' " + output + " '" + result + "' >/dev/null 2>&1").c_str());
  std::stringstream text;
  text << std::ifstream(result).rdbuf();
  std::system(("rm -rf '" + std::string(dir) + "'").c_str());
  if (status != 0) return std::nullopt;
  return text.str();
}

}  // namespace tidal::testing
