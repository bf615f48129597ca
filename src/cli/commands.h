#pragma once
// Subcommands of the tidal executable; each registers itself on the CLI11 app.
#include <CLI/CLI.hpp>

namespace tidal::cli {

void AddExplain(CLI::App& app);
void AddCheckConfig(CLI::App& app);
void AddSimulate(CLI::App& app);
void AddAgent(CLI::App& app);
void AddServe(CLI::App& app);
void AddHealth(CLI::App& app);
void AddTraces(CLI::App& app);
void AddRebalance(CLI::App& app);
void AddDevicePlugin(CLI::App& app);

}  // namespace tidal::cli
