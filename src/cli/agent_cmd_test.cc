// The agent command's safe defaults: loopback unless told, and a kubelet client
// that verifies the certificate unless skipping is asked for explicitly.
#include <gtest/gtest.h>

#include "testing/run_command.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(AgentCommand, ListensOnLoopbackByDefault) {
  const CommandResult r = RunTidal("agent --help");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("127.0.0.1:9410"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.0.0.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--kubelet-insecure-skip-verify"), std::string::npos) << r.out;
}

TEST(AgentCommand, KubeletTrustIsCheckedAtStartUp) {
  struct Case {
    const char* name;
    std::string flags;
    const char* error_part;
  };
  const Case cases[] = {
      {"https without any CA is refused", "", "--kubelet-insecure-skip-verify"},
      {"a CA file that does not exist", " --kubelet-ca /nonexistent/ca.pem",
       "--kubelet-ca /nonexistent/ca.pem: no such file"},
      {"a CA and skipping together",
       " --kubelet-ca /nonexistent/ca.pem --kubelet-insecure-skip-verify", "contradict"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CommandResult r = RunTidal(
        "agent --once --node-name n --nvml-lib /nonexistent/libnvml.so "
        "--nvidia-smi /nonexistent/nvidia-smi --kubelet-url https://127.0.0.1:1/pods "
        "--service-account-ca /nonexistent/sa/ca.crt" +
            tc.flags,
        true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(tc.error_part), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tidal
