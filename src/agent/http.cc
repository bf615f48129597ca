#include "tidal/agent/http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <thread>

#include "tidal/core/file.h"

namespace tidal::agent {

struct MetricsServer::Impl {
  const Agent& agent;
  ServerLimits limits;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::function<void()> hook;
  std::mutex errors_mu;
  std::map<std::pair<std::string, std::string>, std::uint64_t> errors;  // by path, reason
  Impl(const Agent& a, ServerLimits l) : agent(a), limits(l) {}

  // A handler that threw (std::bad_alloc under the pod's memory limit, a bug):
  // httplib would answer an empty 500 seen nowhere.
  void OnException(const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    res.status = 500;
    const char* reason = "unknown";
    std::string what = "not a std::exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::bad_alloc&) {
      reason = "bad_alloc";
      what = "out of memory (std::bad_alloc)";
    } catch (const std::exception& e) {
      reason = "exception";
      what = e.what();
    } catch (...) {
    }
    // A fixed label set: the path is read from the client.
    const std::string path = req.path == "/metrics" || req.path == "/healthz" ? req.path : "other";
    try {  // under memory pressure each step may throw again; the status is set
      {
        std::lock_guard lock(errors_mu);
        ++errors[{path, reason}];
      }
      if (agent.options().warn)
        agent.options().warn(req.method + " " + path + ": answered 500: " + what);
      res.set_content("tidal agent: internal error on " + path + ": " + what + "\n", "text/plain");
    } catch (...) {
    }
  }
  // The counter's family, when a request has failed (none before).
  std::string ErrorsText() {
    std::lock_guard lock(errors_mu);
    if (errors.empty()) return "";
    std::string out =
        "# HELP ai_agent_http_errors_total Requests answered 500 because handling them threw, by "
        "path and what was thrown (bad_alloc, exception, unknown).\n"
        "# TYPE ai_agent_http_errors_total counter\n";
    for (const auto& [key, n] : errors)
      out += "ai_agent_http_errors_total{node=\"" + EscapeLabelValue(agent.options().node) +
             "\",path=\"" + key.first + "\",reason=\"" + key.second + "\"} " + std::to_string(n) +
             "\n";
    return out;
  }
};

void MetricsServer::SetHandlerHookForTest(std::function<void()> hook) {
  impl_->hook = std::move(hook);
}

MetricsServer::MetricsServer(const Agent& agent, ServerLimits limits)
    : impl_(std::make_unique<Impl>(agent, limits)) {}

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
  // cpp-httplib (the packaged 0.11) caps each header line at 8 KiB but not their
  // number; the pre-routing check bounds the rest before a handler sees them.
  const ServerLimits lim = impl_->limits;
  s.set_payload_max_length(lim.max_body_bytes);
  s.set_read_timeout(lim.read_timeout_ms / 1000, (lim.read_timeout_ms % 1000) * 1000);
  s.set_write_timeout(lim.write_timeout_ms / 1000, (lim.write_timeout_ms % 1000) * 1000);
  s.set_keep_alive_max_count(static_cast<std::size_t>(lim.keep_alive_max_requests));
  s.set_keep_alive_timeout(std::max(1, lim.keep_alive_timeout_ms / 1000));
  s.set_pre_routing_handler([lim](const httplib::Request& req, httplib::Response& res) {
    std::size_t bytes = 0;
    for (const auto& [name, value] : req.headers) bytes += name.size() + value.size();
    if (req.headers.size() > lim.max_header_count || bytes > lim.max_header_bytes) {
      res.status = 431;
      res.set_content("request headers too large\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.body.size() > lim.max_body_bytes) {
      res.status = 413;
      res.set_content("request body too large\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  Impl& im = *impl_;
  s.set_exception_handler(
      [&im](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        im.OnException(req, res, std::move(ep));
      });
  s.Get("/metrics", [&agent, &im](const httplib::Request&, httplib::Response& res) {
    if (im.hook) im.hook();
    // The last immutable pass: a scrape never touches the hardware.
    const auto e = agent.Latest();
    if (!e) {
      res.status = 503;
      res.set_content("no collection has finished yet\n", "text/plain");
      return;
    }
    res.set_content(e->text + im.ErrorsText(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/healthz", [&agent, &im](const httplib::Request&, httplib::Response& res) {
    if (im.hook) im.hook();
    const bool ok = agent.Healthy();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ok\n" : "no recent collection\n", "text/plain");
  });
  // bind(2)'s errno survives httplib's cleanup: "Address already in use" for a
  // port another process (a second agent) holds.
  errno = 0;
  const int bound = port == 0 ? s.bind_to_any_port(host.c_str())
                              : (s.bind_to_port(host.c_str(), port) ? port : -1);
  const int err = errno;
  if (bound < 0)
    return Status::Error("cannot listen on " + host + ":" + std::to_string(port) +
                         (err ? std::string(": ") + std::strerror(err) : std::string()));
  impl_->port = bound;
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

Status ResolveKubeletTrust(const std::string& url, const std::string& ca_flag, bool insecure,
                           const std::string& default_ca,
                           const std::function<bool(const std::string&)>& exists,
                           KubeletOptions* out) {
  out->url = url;
  out->ca_file.clear();
  out->insecure_skip_verify = false;
  if (url.rfind("http://", 0) == 0) {
    if (!ca_flag.empty())
      return Status::Error("--kubelet-ca " + ca_flag + ": the kubelet URL " + url +
                           " is plain http, there is no certificate to check");
    return Status();
  }
  if (url.rfind("https://", 0) != 0)
    return Status::Error("--kubelet-url " + url + ": expected https://host:port/pods");
  if (insecure) {
    if (!ca_flag.empty())
      return Status::Error(
          "--kubelet-ca and --kubelet-insecure-skip-verify contradict each other: give one");
    out->insecure_skip_verify = true;
    return Status();
  }
  if (!ca_flag.empty()) {
    if (!exists(ca_flag)) return Status::Error("--kubelet-ca " + ca_flag + ": no such file");
    out->ca_file = ca_flag;
    return Status();
  }
  if (exists(default_ca)) {
    out->ca_file = default_ca;
    return Status();
  }
  return Status::Error("--kubelet-url " + url +
                       ": no CA to verify the kubelet's certificate (no --kubelet-ca and no " +
                       default_ca +
                       "); give --kubelet-ca, or --kubelet-insecure-skip-verify to accept any "
                       "certificate");
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
    if (o.url.rfind("https://", 0) == 0) {
      // Never silently unverified: that takes the explicit flag.
      if (o.insecure_skip_verify) {
        cli.enable_server_certificate_verification(false);
      } else if (o.ca_file.empty()) {
        return Status::Error("kubelet " + o.url + ": no CA to verify its certificate");
      } else {
        cli.set_ca_cert_path(o.ca_file.c_str());
        cli.enable_server_certificate_verification(true);
      }
    }
    httplib::Headers headers;
    if (!o.token_file.empty()) {
      std::string token;
      if (const Status read = ReadRegularFile(o.token_file, kMaxConfigFileBytes, &token);
          !read.ok())
        return Status::Error("kubelet token: " + read.reason());
      while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
      if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    }
    std::string body;
    bool too_large = false;
    // The body is bounded while it arrives: the agent runs under a small memory limit.
    const auto res = cli.Get(path.c_str(), headers, [&](const char* data, std::size_t n) {
      if (body.size() + n > o.max_body_bytes) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_large)
      return Status::Error("kubelet " + o.url + ": pod list larger than " +
                           std::to_string(o.max_body_bytes) + " bytes");
    if (!res) return Status::Error("kubelet " + o.url + ": " + httplib::to_string(res.error()));
    if (res->status != 200)
      return Status::Error("kubelet " + o.url + ": HTTP " + std::to_string(res->status));
    *out = std::move(body);
    return Status();
  };
}

}  // namespace tidal::agent
