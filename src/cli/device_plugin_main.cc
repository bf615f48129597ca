// tidal-device-plugin: the kubelet device plugin alone, for its DaemonSet. The
// same command as `tidal device-plugin`, in an executable that links only the
// plugin (no simulator, extender or rebalancer), like tidal-agent.
#include "cli/commands.h"
#include "cli/one_command_main.h"

int main(int argc, char** argv) {
  return tidal::cli::RunOneCommand(
      argc, argv, "tidal-device-plugin", "device-plugin",
      "tidal-device-plugin: the Tidal kubelet device plugin; the same as `tidal device-plugin`",
      tidal::cli::AddDevicePlugin);
}
