#include <cstdio>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "testing/run_command.h"

namespace tidal {
namespace {

using namespace tidal::testing;

std::string WriteTemp(const std::string& text) {
  char name[] = "/tmp/tidal-config-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

TEST(CheckConfig, ShippedConfigsAreValid) {
  for (const char* file : {"examples/config/tidal.yaml", "examples/config/no-margin.yaml"}) {
    SCOPED_TRACE(file);
    const CommandResult r = RunTidal("check-config " + Source(file));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("rejectThresholdSafetyMargin"), std::string::npos);
  }
}

TEST(CheckConfig, PrintsEveryErrorWithItsPathAndExits1) {
  const std::string path = WriteTemp("thresholds:\n  gpuMemory: {reject: 1.7}\nnvlink: {slotsPerGpu: 0}\n");
  const CommandResult r = RunTidal("check-config " + path, true);
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("thresholds.gpuMemory.reject: 1.7 is outside [0, 1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvlink.slotsPerGpu: must be >= 1"), std::string::npos) << r.out;
}

TEST(CheckConfig, NotYamlExits1) {
  const std::string path = WriteTemp("thresholds: [unclosed\n");
  const CommandResult r = RunTidal("check-config " + path, true);
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not valid YAML"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tidal
