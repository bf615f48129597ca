#include "tidal/agent/http.h"

#include <map>
#include <mutex>

#include "tidal/core/file.h"
#include "tidal/http/client.h"
#include "tidal/http/server.h"

namespace tidal::agent {

struct MetricsServer::Impl {
  const Agent& agent;
  ServerLimits limits;
  std::unique_ptr<http::Server> server;
  std::function<void()> hook;
  std::mutex errors_mu;
  std::map<std::pair<std::string, std::string>, std::uint64_t> errors;  // by path, reason
  Impl(const Agent& a, ServerLimits l) : agent(a), limits(l) {}

  // A handler that threw (std::bad_alloc under the pod's memory limit, a bug):
  // answered 500 with what happened, said through `warn`, and counted.
  void OnException(const http::Request& req, http::Response& res, std::exception_ptr ep) {
    res.status = 500;
    const http::Thrown thrown = http::Classify(ep);
    // A fixed label set: the path is read from the client.
    const std::string path = req.path == "/metrics" || req.path == "/healthz" ? req.path : "other";
    try {  // under memory pressure each step may throw again; the status is set
      {
        std::lock_guard lock(errors_mu);
        ++errors[{path, thrown.reason}];
      }
      if (agent.options().warn)
        agent.options().warn(req.method + " " + path + ": answered 500: " + thrown.what);
      res.Set("tidal agent: internal error on " + path + ": " + thrown.what + "\n", "text/plain");
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

int MetricsServer::port() const { return impl_->server ? impl_->server->port() : 0; }

Status MetricsServer::Start(const std::string& host, int port) {
  Impl& im = *impl_;
  const Agent& agent = im.agent;
  const ServerLimits& lim = im.limits;
  http::Options o;
  o.host = host;
  o.port = port;
  // Scrapes are a few KB of GETs: two threads are plenty, and idle or slow
  // clients hold none of them.
  o.limits.threads = 2;
  o.limits.max_body_bytes = lim.max_body_bytes;
  o.limits.max_header_bytes = lim.max_header_bytes;
  o.limits.header_timeout_ms = lim.header_timeout_ms;
  o.limits.body_timeout_ms = lim.header_timeout_ms;  // bodies are at most 1 KiB here
  o.limits.write_timeout_ms = lim.write_timeout_ms;
  o.limits.idle_timeout_ms = lim.idle_timeout_ms;
  o.limits.max_connections = lim.max_connections;
  o.on_exception = [&im](const http::Request& req, http::Response& res, std::exception_ptr ep) {
    im.OnException(req, res, std::move(ep));
  };
  im.server = std::make_unique<http::Server>(std::move(o));
  im.server->Route("GET", "/metrics", [&agent, &im](const http::Request&, http::Response& res) {
    if (im.hook) im.hook();
    // The last immutable pass: a scrape never touches the hardware.
    const auto e = agent.Latest();
    if (!e) {
      res.status = 503;
      res.Set("no collection has finished yet\n", "text/plain");
      return;
    }
    res.Set(e->text + im.ErrorsText() + http::CountersText("ai_agent", im.server->counters()),
            "text/plain; version=0.0.4; charset=utf-8");
  });
  im.server->Route("GET", "/healthz", [&agent, &im](const http::Request&, http::Response& res) {
    if (im.hook) im.hook();
    const bool ok = agent.Healthy();
    res.status = ok ? 200 : 503;
    res.Set(ok ? "ok\n" : "no recent collection\n", "text/plain");
  });
  return im.server->Start();
}

void MetricsServer::Stop() {
  if (impl_ && impl_->server) impl_->server->Stop();
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
    // scheme://host:port alone means its /pods.
    const std::size_t scheme = o.url.find("://");
    const bool has_path =
        o.url.find('/', scheme == std::string::npos ? 0 : scheme + 3) != std::string::npos;
    const std::string url = has_path ? o.url : o.url + "/pods";
    http::GetOptions get;
    get.timeout_ms = o.timeout_ms;
    get.max_body_bytes = o.max_body_bytes;
    get.ca_file = o.ca_file;
    get.insecure_skip_verify = o.insecure_skip_verify;
    get.tls_module = o.tls_module;
    // Never silently unverified: that takes the explicit flag.
    if (o.url.rfind("https://", 0) == 0 && !o.insecure_skip_verify && o.ca_file.empty())
      return Status::Error("kubelet " + o.url + ": no CA to verify its certificate");
    std::vector<std::pair<std::string, std::string>> headers;
    if (!o.token_file.empty()) {
      std::string token;
      if (const Status read = ReadRegularFile(o.token_file, kMaxConfigFileBytes, &token);
          !read.ok())
        return Status::Error("kubelet token: " + read.reason());
      while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
      if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + token);
    }
    // The body is bounded while it arrives: the agent runs under a small memory limit.
    http::GetResult res;
    if (Status st = http::Get(url, headers, get, &res); !st.ok())
      return Status::Error("kubelet " + st.reason());
    if (res.status != 200)
      return Status::Error("kubelet " + o.url + ": HTTP " + std::to_string(res.status));
    *out = std::move(res.body);
    return Status();
  };
}

}  // namespace tidal::agent
