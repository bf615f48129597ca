// tidal rebalance's flags: dry run unless --execute, and every bad setting named
// at start-up, before anything is read or sent.
#include <gtest/gtest.h>

#include "testing/run_command.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(RebalanceCommand, DryRunIsTheDefault) {
  const CommandResult r = RunTidal("rebalance --help");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("--execute"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dry run"), std::string::npos) << r.out;
}

TEST(RebalanceCommand, BadSettingsAreNamed) {
  struct Case {
    const char* name;
    std::string flags;
    const char* error_part;
  };
  const Case cases[] = {
      {"no Kubernetes API", "", "--in-cluster or --kubeconfig"},
      {"both APIs", " --in-cluster --kubeconfig /nonexistent", "--in-cluster or --kubeconfig"},
      {"dry run and execute", " --dry-run --execute --kubeconfig /nonexistent",
       "--dry-run and --execute"},
      {"a bad duration", " --kubeconfig /nonexistent --sustain often", "--sustain often"},
      {"an LSCS limit above 1", " --kubeconfig /nonexistent --lscs-limit 1.5", "lscs-limit"},
      {"a step longer than the gap", " --kubeconfig /nonexistent --step 10m", "--step 10m"},
      {"a kubeconfig that does not exist", " --kubeconfig /nonexistent/kubeconfig",
       "/nonexistent/kubeconfig"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunTidal("rebalance --prometheus http://127.0.0.1:1" + tc.flags, true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(tc.error_part), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal
