// tidal-agent: the node agent alone, for the DaemonSet. The same command as
// `tidal agent`, in an executable that links only the agent (no simulator,
// extender or rebalancer), so the process maps and touches less.
#include "cli/commands.h"
#include "cli/one_command_main.h"

int main(int argc, char** argv) {
  return tidal::cli::RunOneCommand(
      argc, argv, "tidal-agent", "agent",
      "tidal-agent: the Tidal node agent (ai-node-metrics); the same as `tidal agent`",
      tidal::cli::AddAgent);
}
