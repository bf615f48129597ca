#include "cli/commands.h"

namespace tidal::cli {

void AddAgent(CLI::App&) {}

}  // namespace tidal::cli
