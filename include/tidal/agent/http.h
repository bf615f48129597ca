#pragma once
// HTTP for the agent: /metrics and /healthz over an Agent's latest exposition,
// and the kubelet pod-list client. The HTTP libraries stay behind these classes.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "tidal/agent/agent.h"
#include "tidal/agent/pods.h"

namespace tidal::agent {

// What one request may carry. The agent only serves GETs of a few bytes, so the
// limits are tight: a larger request is refused before it is buffered
// (tidal::http::Server: idle and slow clients hold no thread).
struct ServerLimits {
  std::size_t max_body_bytes = 1024;     // 413 above (Content-Length or chunked)
  std::size_t max_header_bytes = 16384;  // request line and headers; 431 above
  int header_timeout_ms = 5000;          // from a request's first byte; then closed
  int write_timeout_ms = 5000;
  int idle_timeout_ms = 5000;  // keep-alive between requests (Prometheus scrapes every 15 s+)
  std::size_t max_connections = 1024;  // the longest idle is closed to admit a new one
};

class MetricsServer {
 public:
  explicit MetricsServer(const Agent& agent, ServerLimits limits = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds host:port (port 0 picks a free one) and serves on background threads.
  Status Start(const std::string& host, int port);
  void Stop();
  int port() const;
  // Tests: called at the start of every handler (before Start), so that a test
  // can make one throw. A handler that throws is answered 500 with a body saying
  // what happened, said through the agent's `warn`, and counted in
  // ai_agent_http_errors_total{path,reason} on /metrics.
  void SetHandlerHookForTest(std::function<void()> hook);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline constexpr const char* kServiceAccountCa =
    "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

struct KubeletOptions {
  std::string url;  // e.g. https://node-ip:10250/pods
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file;                // verifies the kubelet's serving certificate
  bool insecure_skip_verify = false;  // only when asked for: the token would go to anyone
  int timeout_ms = 5000;
  std::size_t max_body_bytes = std::size_t{16} << 20;  // a PodList larger than this is refused
  std::string tls_module;  // https: http::GetOptions::tls_module (empty: beside the executable)
};

// Chooses how the kubelet's certificate is checked: an explicit --kubelet-ca, else
// the service-account CA `default_ca` when it exists (in a pod), else an error naming the flags,
// unless verification is explicitly skipped. Plain http needs no CA.
// `exists` is injected so tests need no file system.
Status ResolveKubeletTrust(const std::string& url, const std::string& ca_flag, bool insecure,
                           const std::string& default_ca,
                           const std::function<bool(const std::string&)>& exists,
                           KubeletOptions* out);

// A PodListSource that GETs the kubelet's /pods with the service-account token.
PodListSource KubeletPodSource(KubeletOptions options);

}  // namespace tidal::agent
