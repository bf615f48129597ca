#include "tidal/kube/config.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/process.h"
#include "tidal/core/status.h"

namespace tidal::kube {
namespace {

TEST(ServerUrl, Table) {
  struct Case {
    std::string name, url;
    bool ok;
    std::string host;
    int port;
    std::string scheme;
  };
  const std::vector<Case> cases = {
      {"https default port", "https://api.example", true, "api.example", 443, "https"},
      {"https with port", "https://10.0.0.1:6443", true, "10.0.0.1", 6443, "https"},
      {"trailing slash", "https://10.0.0.1:6443/", true, "10.0.0.1", 6443, "https"},
      {"http default port", "http://127.0.0.1", true, "127.0.0.1", 80, "http"},
      {"ipv6", "https://[fd00::1]:6443", true, "fd00::1", 6443, "https"},
      {"no scheme", "10.0.0.1:6443", false, "", 0, ""},
      {"bad port", "https://h:65536", false, "", 0, ""},
      {"port letters", "https://h:64x", false, "", 0, ""},
      {"path", "https://h:1/api", false, "", 0, ""},
      {"empty host", "https://:443", false, "", 0, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string error;
    auto e = ParseServerUrl(c.url, &error);
    ASSERT_EQ(e.has_value(), c.ok) << error;
    if (!c.ok) {
      EXPECT_NE(error.find(c.url), std::string::npos) << error;
      continue;
    }
    EXPECT_EQ(e->host, c.host);
    EXPECT_EQ(e->port, c.port);
    EXPECT_EQ(e->scheme, c.scheme);
  }
}

TEST(Base64, Table) {
  EXPECT_EQ(DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_FALSE(DecodeBase64("aGV*bG8="));
  EXPECT_FALSE(DecodeBase64("aGVsbG8=x"));
  EXPECT_FALSE(DecodeBase64("a"));
}

TEST(InCluster, ReadsEnvTokenAndCa) {
  testing::TempDir dir;
  dir.Write("sa/token", "tok\n");
  dir.Write("sa/ca.crt", "-----BEGIN CERTIFICATE-----\n");
  std::map<std::string, std::string> env{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                         {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  Endpoint e = InClusterEndpoint(getenv, dir.path() + "/sa");
  EXPECT_EQ(e.BaseUrl(), "https://10.96.0.1:443");
  EXPECT_EQ(e.token_file, dir.path() + "/sa/token");
  EXPECT_EQ(e.ca_pem, "-----BEGIN CERTIFICATE-----\n");
  env.erase("KUBERNETES_SERVICE_HOST");
  try {
    InClusterEndpoint(getenv, dir.path() + "/sa");
    FAIL() << "expected an error";
  } catch (const InputError& err) {
    EXPECT_NE(err.message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  }
}

constexpr const char* kKindConfig = R"(apiVersion: v1
kind: Config
current-context: kind-tidal
clusters:
- name: kind-tidal
  cluster:
    server: https://127.0.0.1:40123
    certificate-authority-data: Q0EtUEVN
- name: other
  cluster:
    server: https://10.1.1.1
    certificate-authority: other-ca.crt
contexts:
- name: kind-tidal
  context: {cluster: kind-tidal, user: kind-tidal}
- name: other
  context: {cluster: other, user: tokenuser}
users:
- name: kind-tidal
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: tokenuser
  user:
    token: abc
)";

TEST(Kubeconfig, CurrentContextWithInlineData) {
  Endpoint e = ParseKubeconfig(kKindConfig, "/x/config");
  EXPECT_EQ(e.BaseUrl(), "https://127.0.0.1:40123");
  EXPECT_EQ(e.ca_pem, "CA-PEM");
  EXPECT_EQ(e.client_cert_pem, "CERT");
  EXPECT_EQ(e.client_key_pem, "KEY");
}

TEST(Kubeconfig, NamedContextWithFilesRelativeToTheConfig) {
  testing::TempDir dir;
  dir.Write("other-ca.crt", "OTHER-CA");
  const std::string path = dir.Write("config", kKindConfig);
  Endpoint e = LoadKubeconfig(path, "other");
  EXPECT_EQ(e.host, "10.1.1.1");
  EXPECT_EQ(e.port, 443);
  EXPECT_EQ(e.ca_pem, "OTHER-CA");
  EXPECT_EQ(e.token, "abc");
}

TEST(Kubeconfig, ErrorsNameTheField) {
  struct Case {
    std::string name, yaml, context, expect;
  };
  const std::vector<Case> cases = {
      {"not yaml", "a: [", "", "not valid YAML"},
      {"no context", "clusters: []\n", "", "no current-context"},
      {"unknown context", kKindConfig, "nope", "no contexts entry named \"nope\""},
      {"exec user",
       "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
       "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]\n",
       "", "exec and auth-provider"},
      {"bad server",
       "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {server: 'h:1'}}]\n",
       "", "server"},
      {"bad base64",
       "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {server: 'https://h', certificate-authority-data: '*'}}]\n",
       "", "certificate-authority-data: not valid base64"},
      {"cert without key",
       "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
       "clusters: [{name: k, cluster: {server: 'https://h'}}]\n"
       "users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]\n",
       "", "needs its key"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      ParseKubeconfig(c.yaml, "kc.yaml", c.context);
      ADD_FAILURE() << "expected an error";
    } catch (const InputError& e) {
      EXPECT_NE(e.message.find(c.expect), std::string::npos) << e.message;
      EXPECT_NE(e.message.find("kc.yaml"), std::string::npos) << e.message;
    }
  }
}

}  // namespace
}  // namespace tidal::kube
