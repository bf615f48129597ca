#pragma once
// Where the Kubernetes API server is and how to authenticate to it: in-cluster
// (the service account's token and CA, KUBERNETES_SERVICE_HOST/PORT) or a
// kubeconfig file (its current context, or the one named). Loading throws
// InputError naming the file and field; nothing half-loaded is used.
#include <functional>
#include <optional>
#include <string>

namespace tidal::kube {

struct Endpoint {
  std::string scheme = "https";  // "https" or "http" (tests, kubectl proxy)
  std::string host;
  int port = 443;
  std::string ca_pem;  // PEM text of the CA bundle; empty: the system's store
  bool insecure_skip_verify = false;
  std::string token;       // a static bearer token
  std::string token_file;  // re-read when it changes (projected tokens rotate)
  std::string client_cert_pem, client_key_pem;
  std::string source;  // for messages: "in-cluster" or the kubeconfig path and context

  std::string BaseUrl() const { return scheme + "://" + host + ":" + std::to_string(port); }
};

// Parses "https://host:port" (IPv6 in brackets); default port by scheme.
std::optional<Endpoint> ParseServerUrl(const std::string& url, std::string* error);

using Getenv = std::function<std::optional<std::string>(const std::string&)>;
Getenv ProcessEnv();

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster: KUBERNETES_SERVICE_HOST and _PORT, `token` and `ca.crt` under
// `service_account_dir`.
Endpoint InClusterEndpoint(const Getenv& env, const std::string& service_account_dir);

// A kubeconfig file; `context` empty: its current-context. Relative file paths in
// it are taken from the file's directory, as kubectl does.
Endpoint LoadKubeconfig(const std::string& path, const std::string& context = "");
Endpoint ParseKubeconfig(const std::string& yaml_text, const std::string& path,
                         const std::string& context = "");

// RFC 4648 base64 (the kubeconfig's *-data fields); nullopt on a bad character.
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace tidal::kube
