#pragma once
// HTTP for the extender: POST /filter and /prioritize, GET /healthz, /readyz,
// /metrics and /debug/nodes, on tidal::http::Server (event-driven: idle and slow
// clients hold no worker; limits and deadlines in include/tidal/http/server.h).
// An optional second listener
// serves only /healthz, /readyz and /metrics, so that the verbs can stay on
// loopback while the kubelet's probes and Prometheus reach the pod's address.
#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <string>

#include "tidal/core/exposition.h"
#include "tidal/extender/binder.h"
#include "tidal/extender/extender.h"
#include "tidal/http/server.h"

namespace tidal::extender {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8890;  // 0: any free port
  int threads = 8;
  std::size_t max_body_bytes = 64u << 20;   // a 5 000-node Nodes payload is ~70 MB at 14 KB a node
  std::string tls_cert_file, tls_key_file;  // both set: HTTPS
  // Set (with HTTPS): the verbs' listener takes only clients with a certificate
  // this CA signed, as kube-scheduler's extender tlsConfig certFile gives.
  std::string tls_client_ca_file;
  BuildInfo build{};  // /metrics exports tidal_build_info unless its version is empty
  // The second listener (empty host: none): /healthz, /readyz and /metrics only,
  // never the verbs or /debug. Same TLS, timeouts and keep-alive as the first.
  std::string metrics_host;
  int metrics_port = 0;                       // 0: any free port
  int metrics_threads = 2;                    // probes and scrapes: a few small GETs at a time
  std::size_t metrics_max_body_bytes = 1024;  // it serves GETs only
  // Where a request that threw is logged (null: spdlog's default logger).
  std::shared_ptr<spdlog::logger> log{};
};

class Server {
 public:
  Server(Extender& extender, ExtenderMetrics& metrics, const ViewStore& store, const Clock& clock,
         ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // POST /bind (before Start). Without it /bind is not served: kube-scheduler
  // binds itself (no bindVerb in its extender config).
  void SetBinder(Binder* binder);
  // /readyz also waits for this to return "" (e.g. the API watches' first list).
  void SetReadiness(std::function<std::string()> not_ready);
  // Binds and serves on background threads.
  Status Start();
  void Stop();
  int port() const;
  // The second listener's port; -1 when there is none.
  int metrics_port() const;
  // The text of /metrics (also for tests).
  std::string MetricsText();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidal::extender
