// tidal-agent: the node agent alone, for the DaemonSet. The same command as
// `tidal agent`, in an executable that links only the agent (no simulator,
// extender or rebalancer), so the process maps and touches less.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/version.h"
#include "tidal/core/status.h"

int main(int argc, char** argv) {
  CLI::App app{"tidal-agent: the Tidal node agent (ai-node-metrics); the same as `tidal agent`"};
  app.set_version_flag("--version",
                       tidal::cli::VersionLine("tidal-agent", tidal::cli::TidalBuild()));
  app.require_subcommand(0, 1);
  tidal::cli::AddAgent(app);
  // `tidal-agent FLAGS` and `tidal-agent agent FLAGS` both run the agent;
  // --version belongs to tidal-agent itself.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || (args.front() != "agent" && args.front() != "--version"))
    args.insert(args.begin(), "agent");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return tidal::cli::ParseErrorExit(app, e);
  } catch (const tidal::InputError& e) {
    std::cerr << "tidal-agent: " << e.message << (e.message.ends_with('\n') ? "" : "\n");
    return tidal::cli::kExitUsage;
  }
  return tidal::cli::kExitOk;
}
