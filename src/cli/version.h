#pragma once
// The release and git revision this build came from, for --version and
// tidal_build_info. TidalBuild is defined in a file generated on every build
// (cmake/TidalVersion.cmake), in a library of its own, so a new commit
// recompiles and relinks only what prints the version.
#include <string>
#include <string_view>

#include "tidal/core/exposition.h"

namespace tidal::cli {

BuildInfo TidalBuild();

// "tidal 0.1.0 (v0.1.0-3-g88583e7-dirty)"; without the parentheses when the
// build had no git checkout to describe (a source archive).
inline std::string VersionLine(std::string_view program, const BuildInfo& build) {
  std::string line = std::string(program) + " " + build.version;
  if (!build.revision.empty()) line += " (" + build.revision + ")";
  return line;
}

}  // namespace tidal::cli
