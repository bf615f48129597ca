#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>

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
  for (const char* file :
       {"examples/config/tidal.yaml", "examples/config/no-margin.yaml",
        "examples/config/load-aware-frag.yaml", "deploy/scheduler/policy.yaml"}) {
    SCOPED_TRACE(file);
    const CommandResult r = RunTidal("check-config " + Source(file));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("rejectThresholdSafetyMargin"), std::string::npos);
  }
}

TEST(CheckConfig, PrintsEveryErrorWithItsPathAndExits1) {
  const std::string path =
      WriteTemp("thresholds:\n  gpuMemory: {reject: 1.7}\nnvlink: {slotsPerGpu: 0}\n");
  const CommandResult r = RunTidal("check-config " + path, true);
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("thresholds.gpuMemory.reject: 1.7 is outside [0, 1]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("nvlink.slotsPerGpu: must be >= 1"), std::string::npos) << r.out;
}

TEST(CheckConfig, NotYamlExits1) {
  const std::string path = WriteTemp("thresholds: [unclosed\n");
  const CommandResult r = RunTidal("check-config " + path, true);
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not valid YAML"), std::string::npos) << r.out;
}

// yaml-cpp's emitter alone writes 0.7 as 0.69999999999999996.
TEST(CheckConfig, DumpsNumbersAsShortAsTheyReadBack) {
  const CommandResult r = RunTidal("check-config " + Source("examples/config/tidal.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* want :
       {"gpuMemory: {warn: 0.7, reject: 0.85}", "nvlink: {warn: 0.3, reject: 0.6}",
        "rejectThresholdSafetyMargin: 0.03\n"}) {
    SCOPED_TRACE(want);
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  }
  std::smatch long_number;
  EXPECT_FALSE(std::regex_search(r.out, long_number, std::regex("[0-9]\\.[0-9]{8,}")))
      << long_number.str();
}

// reject minus the margin is 0.6499999999999999 in doubles; the message says 0.65.
TEST(CheckConfig, AThresholdDerivedForAnErrorIsShort) {
  struct Case {
    const char* name;
    const char* config;
    const char* want;
  };
  const Case cases[] = {
      {"a margin that leaves no warning band", "rejectThresholdSafetyMargin: 0.2\n",
       "rejectThresholdSafetyMargin: 0.2 puts the effective GPU memory reject threshold at 0.65, "
       "not above warn 0.7"},
      {"a slope past the effective reject threshold", "gpuMemoryDecaySlope: 0.9\n",
       "gpuMemoryDecaySlope: 0.9 is outside (0, 0.82]"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::string path = WriteTemp(tc.config);
    const CommandResult r = RunTidal("check-config " + path, true);
    std::remove(path.c_str());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find(tc.want), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal
