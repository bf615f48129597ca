#pragma once
// The main of an executable that runs one of tidal's commands alone (tidal-agent,
// tidal-device-plugin), linking only what that command needs.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/version.h"
#include "tidal/core/status.h"

namespace tidal::cli {

// `EXECUTABLE FLAGS` and `EXECUTABLE COMMAND FLAGS` both run `command`, which
// `add` adds to the app; --version belongs to the executable itself.
inline int RunOneCommand(int argc, char** argv, const std::string& executable,
                         const std::string& command, const std::string& about,
                         void (*add)(CLI::App&)) {
  CLI::App app{about};
  app.set_version_flag("--version", VersionLine(executable, TidalBuild()));
  app.require_subcommand(0, 1);
  add(app);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || (args.front() != command && args.front() != "--version"))
    args.insert(args.begin(), command);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ParseErrorExit(app, e);
  } catch (const InputError& e) {
    std::cerr << executable << ": " << e.message << (e.message.ends_with('\n') ? "" : "\n");
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace tidal::cli
