#include "tidal/agent/http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace tidal::agent {

struct MetricsServer::Impl {
  const Agent& agent;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  explicit Impl(const Agent& a) : agent(a) {}
};

MetricsServer::MetricsServer(const Agent& agent) : impl_(std::make_unique<Impl>(agent)) {}

MetricsServer::~MetricsServer() { Stop(); }

int MetricsServer::port() const { return impl_->port; }

Status MetricsServer::Start(const std::string& host, int port) {
  httplib::Server& s = impl_->server;
  const Agent& agent = impl_->agent;
  // Scrapes are a few KB: no Nagle delay, and two workers are plenty.
  s.set_tcp_nodelay(true);
  s.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // httplib's default adds SO_REUSEPORT, which would let a second agent share the
  // port silently; a busy port must be an error.
  s.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.Get("/metrics", [&agent](const httplib::Request&, httplib::Response& res) {
    // The last immutable pass: a scrape never touches the hardware.
    const auto e = agent.Latest();
    if (!e) {
      res.status = 503;
      res.set_content("no collection has finished yet\n", "text/plain");
      return;
    }
    res.set_content(e->text, "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/healthz", [&agent](const httplib::Request&, httplib::Response& res) {
    const bool ok = agent.Healthy();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ok\n" : "no recent collection\n", "text/plain");
  });
  if (port == 0) {
    impl_->port = s.bind_to_any_port(host.c_str());
    if (impl_->port < 0) return Status::Error("cannot bind " + host);
  } else {
    if (!s.bind_to_port(host.c_str(), port))
      return Status::Error("cannot listen on " + host + ":" + std::to_string(port));
    impl_->port = port;
  }
  impl_->thread = std::thread([&s] { s.listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so Stop() right after Start()
  // would hang: return only once the server is live.
  while (!s.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status();
}

void MetricsServer::Stop() {
  if (!impl_) return;
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

PodListSource KubeletPodSource(KubeletOptions options) {
  return [o = std::move(options)](std::string* out) {
    // scheme://host:port, then the path.
    const std::size_t scheme = o.url.find("://");
    const std::size_t slash = o.url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    const std::string base = slash == std::string::npos ? o.url : o.url.substr(0, slash);
    const std::string path = slash == std::string::npos ? "/pods" : o.url.substr(slash);
    httplib::Client cli(base);
    if (!cli.is_valid()) return Status::Error("kubelet URL " + o.url + " is not usable");
    cli.set_connection_timeout(0, o.timeout_ms * 1000);
    cli.set_read_timeout(o.timeout_ms / 1000, (o.timeout_ms % 1000) * 1000);
    if (o.ca_file.empty()) {
      cli.enable_server_certificate_verification(false);
    } else {
      cli.set_ca_cert_path(o.ca_file.c_str());
    }
    httplib::Headers headers;
    if (!o.token_file.empty()) {
      std::ifstream in(o.token_file);
      std::ostringstream ss;
      ss << in.rdbuf();
      std::string token = ss.str();
      while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
      if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    }
    const auto res = cli.Get(path.c_str(), headers);
    if (!res) return Status::Error("kubelet " + o.url + ": " + httplib::to_string(res.error()));
    if (res->status != 200)
      return Status::Error("kubelet " + o.url + ": HTTP " + std::to_string(res->status));
    *out = res->body;
    return Status();
  };
}

}  // namespace tidal::agent
