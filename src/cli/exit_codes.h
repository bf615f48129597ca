#pragma once
// Exit codes of tidal and tidal-agent (README, "Exit codes"). Scripts rely on
// them, so they are named once here.
#include <CLI/CLI.hpp>

namespace tidal::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // check-config: errors; health: unhealthy
inline constexpr int kExitUsage = 2;    // a bad flag, argument or input file
inline constexpr int kExitNoFit = 3;    // explain: no node fits the pod

// What CLI11 reported, with the exit code scripts are promised: --help and
// --version 0, a command's own code (CLI::RuntimeError) as it is, and every
// parse error 2 (CLI11's own codes, one per kind of error, are 100 and up).
inline int ParseErrorExit(const CLI::App& app, const CLI::ParseError& e) {
  const int rc = app.exit(e);
  if (rc == kExitOk || dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr) return rc;
  return kExitUsage;
}

}  // namespace tidal::cli
