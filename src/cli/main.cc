#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/version.h"
#include "tidal/core/status.h"

namespace {

// "tidal" alone: the subcommands it expected, by name.
int NoSubcommand(const CLI::App& app) {
  std::string names;
  const auto all = app.get_subcommands([](const CLI::App*) { return true; });
  for (std::size_t i = 0; i < all.size(); ++i)
    names += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i]->get_name();
  std::cerr << "tidal: expected a subcommand: " << names
            << "\nRun with --help for more information.\n";
  return tidal::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tidal: a load-aware scheduler for AI workloads on Kubernetes GPU clusters"};
  app.set_version_flag("--version", tidal::cli::VersionLine("tidal", tidal::cli::TidalBuild()));
  // At most one; none is reported after parsing, so that an unknown word is
  // named as such rather than taken for a missing subcommand.
  app.require_subcommand(0, 1);
  tidal::cli::AddExplain(app);
  tidal::cli::AddCheckConfig(app);
  tidal::cli::AddSimulate(app);
  tidal::cli::AddAgent(app);
  tidal::cli::AddServe(app);
  tidal::cli::AddHealth(app);
  tidal::cli::AddTraces(app);
  tidal::cli::AddRebalance(app);
  tidal::cli::AddDevicePlugin(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) return NoSubcommand(app);
  } catch (const CLI::ParseError& e) {
    return tidal::cli::ParseErrorExit(app, e);
  } catch (const tidal::InputError& e) {
    std::cerr << "tidal: " << e.message << (e.message.ends_with('\n') ? "" : "\n");
    return tidal::cli::kExitUsage;
  }
  return tidal::cli::kExitOk;
}
