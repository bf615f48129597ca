// tidal-device-plugin: the kubelet device plugin alone, for its DaemonSet. The
// same command as `tidal device-plugin`, in an executable that links only the
// plugin (no simulator, extender or rebalancer), like tidal-agent.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/version.h"
#include "tidal/core/status.h"

int main(int argc, char** argv) {
  CLI::App app{
      "tidal-device-plugin: the Tidal kubelet device plugin; the same as `tidal "
      "device-plugin`"};
  app.set_version_flag("--version",
                       tidal::cli::VersionLine("tidal-device-plugin", tidal::cli::TidalBuild()));
  app.require_subcommand(0, 1);
  tidal::cli::AddDevicePlugin(app);
  // `tidal-device-plugin FLAGS` and `tidal-device-plugin device-plugin FLAGS`
  // both run it; --version belongs to the executable itself.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || (args.front() != "device-plugin" && args.front() != "--version"))
    args.insert(args.begin(), "device-plugin");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return tidal::cli::ParseErrorExit(app, e);
  } catch (const tidal::InputError& e) {
    std::cerr << "tidal-device-plugin: " << e.message << (e.message.ends_with('\n') ? "" : "\n");
    return tidal::cli::kExitUsage;
  }
  return tidal::cli::kExitOk;
}
