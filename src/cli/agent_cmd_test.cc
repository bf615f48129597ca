// The agent command's safe defaults: loopback unless told, and a kubelet client
// that verifies the certificate unless skipping is asked for explicitly.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <thread>

#include "testing/run_command.h"
#include "testing/tls.h"

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

// The DaemonSet gives no pod source: the competition collector is left out, not
// reported down (which would fire TidalAgentCollectorDown on every node).
TEST(AgentCommand, NoPodSourceMeansNoCompetitionCollector) {
  const CommandResult r = RunBinary(TIDAL_AGENT_BINARY,
                                    "--once --node-name n --nvml-lib /nonexistent/libnvml.so "
                                    "--nvidia-smi /nonexistent/nvidia-smi");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(R"(ai_collector_up{node="n",collector="disk",reason=""} 1)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("nvlink_competition"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ai_nvlink_competition_index"), std::string::npos) << r.out;
}

// https is served by the TLS module (tidal-https.so) that both executables load
// from beside themselves: the pod list reaches the competition index.
TEST(AgentCommand, FetchesTheKubeletsPodsOverHttpsThroughTheTlsModule) {
  TempDir dir;
  const TestPki pki = MakeTestPki(dir);
  httplib::SSLServer kubelet(pki.server_cert_file.c_str(), pki.server_key_file.c_str());
  std::string seen_auth;
  kubelet.Get("/pods", [&](const httplib::Request& req, httplib::Response& res) {
    seen_auth = req.get_header_value("Authorization");
    res.set_content(R"({"kind":"PodList","items":[]})", "application/json");
  });
  const int port = kubelet.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { kubelet.listen_after_bind(); });
  const std::string token = dir.Write("token", "t0ken\n");
  // One GPU from the stand-in NVML: the index needs the GPU count.
  ::setenv("TIDAL_NVML_STUB_SCRIPT",
           dir.Write("nvml.script", "gpu 0 uuid GPU-0\ngpu 0 memory 85899345920 0 0\n").c_str(), 1);
  const std::string flags =
      std::string("--once --node-name n --nvml-lib ") + TIDAL_NVML_STUB +
      " --nvidia-smi /nonexistent/nvidia-smi --kubelet-url https://127.0.0.1:" +
      std::to_string(port) + "/pods --kubelet-ca " + pki.ca_file + " --kubelet-token-file " + token;
  struct Case {
    const char* name;
    std::string program, args;
  };
  const Case cases[] = {{"tidal-agent", TIDAL_AGENT_BINARY, flags},
                        {"tidal agent", TIDAL_BINARY, "agent " + flags}};
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    seen_auth.clear();
    const CommandResult r = RunBinary(tc.program, tc.args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(R"(ai_collector_up{node="n",collector="nvlink_competition",reason=""} 1)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(seen_auth, "Bearer t0ken");
  }
  kubelet.stop();
  serving.join();
}

}  // namespace
}  // namespace tidal
