#pragma once
// HTTP for the agent: /metrics and /healthz over an Agent's latest exposition,
// and the kubelet pod-list client. The HTTP library stays behind these classes.
#include <memory>
#include <string>

#include "tidal/agent/agent.h"
#include "tidal/agent/pods.h"

namespace tidal::agent {

class MetricsServer {
 public:
  explicit MetricsServer(const Agent& agent);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds host:port (port 0 picks a free one) and serves on background threads.
  Status Start(const std::string& host, int port);
  void Stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct KubeletOptions {
  std::string url;  // e.g. https://node-ip:10250/pods
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file;  // empty: do not verify the kubelet's serving certificate
  int timeout_ms = 5000;
};

// A PodListSource that GETs the kubelet's /pods with the service-account token.
PodListSource KubeletPodSource(KubeletOptions options);

}  // namespace tidal::agent
