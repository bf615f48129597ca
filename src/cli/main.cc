#include <iostream>

#include "cli/commands.h"
#include "tidal/core/status.h"

int main(int argc, char** argv) {
  CLI::App app{"Tidal: a load-aware scheduler for AI workloads on Kubernetes GPU clusters"};
  app.require_subcommand(1);
  tidal::cli::AddExplain(app);
  tidal::cli::AddCheckConfig(app);
  tidal::cli::AddSimulate(app);
  tidal::cli::AddAgent(app);
  tidal::cli::AddServe(app);
  tidal::cli::AddHealth(app);
  tidal::cli::AddTraces(app);
  tidal::cli::AddRebalance(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tidal::InputError& e) {
    std::cerr << "tidal: " << e.message << (e.message.ends_with('\n') ? "" : "\n");
    return 2;
  }
  return 0;
}
