#include "cli/commands.h"

namespace tidal::cli {

void AddSimulate(CLI::App&) {}

}  // namespace tidal::cli
