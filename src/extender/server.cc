#include "tidal/extender/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <new>
#include <string_view>
#include <thread>

#include "tidal/core/exposition.h"
#include "tidal/core/text.h"

namespace tidal::extender {

struct Server::Impl {
  Extender& extender;
  ExtenderMetrics& metrics;
  const ViewStore& store;
  const Clock& clock;
  ServerOptions options;
  std::unique_ptr<httplib::Server> http;
  std::thread thread;
  int port = -1;
  Binder* binder = nullptr;
  std::function<std::string()> not_ready;
  std::atomic<bool> ready{false};  // latched: once ready, the verbs never ask again
  // The second listener: probes and scrapes only.
  std::unique_ptr<httplib::Server> ops{};
  std::thread ops_thread{};
  int ops_port = -1;

  // Why the verbs cannot decide yet ("" when they can).
  std::string NotReady() {
    if (ready.load(std::memory_order_relaxed) || !not_ready) return "";
    std::string why = not_ready();
    if (why.empty()) ready.store(true);
    return why;
  }
};

Server::Server(Extender& extender, ExtenderMetrics& metrics, const ViewStore& store,
               const Clock& clock, ServerOptions options)
    : impl_(new Impl{
          extender, metrics, store, clock, std::move(options), nullptr, {}, -1, nullptr, nullptr}) {
}

Server::~Server() { Stop(); }

void Server::SetBinder(Binder* binder) { impl_->binder = binder; }
void Server::SetReadiness(std::function<std::string()> not_ready) {
  impl_->not_ready = std::move(not_ready);
}

namespace {
Reply NotReadyReply(std::string_view verb, const std::string& why) {
  Reply r;
  const std::string error = "tidal: not ready: " + why;
  if (verb == "filter") {
    FilterResult f;
    f.error = error;
    EncodeFilterResult(f, &r.body);
  } else if (verb == "bind") {
    EncodeBindingResult(error, &r.body);
  } else {
    r.http_status = 503;
    r.body = error;
  }
  return r;
}

// Nodes of the snapshot by the source that fed each dimension: counts, not a
// series per node (/debug/nodes names them), so the cardinality stays fixed.
void AppendSourceCounts(const MetricsSnapshot* snapshot, std::string* out) {
  std::map<std::pair<std::string_view, std::string_view>, int> counts;
  if (snapshot)
    for (const auto& [name, m] : snapshot->nodes) {
      ++counts[{"gpuMemory", m.sources.gpu_memory}];
      ++counts[{"nvlink", m.sources.nvlink}];
      ++counts[{"topology", m.sources.topology}];
      ++counts[{"competition", m.sources.competition}];
      ++counts[{"storage", m.sources.storage}];
    }
  *out +=
      "# HELP tidal_extender_snapshot_nodes_by_source Nodes of the metrics snapshot by the source "
      "that fed each dimension (tidal-agent, dcgm-exporter, node-exporter, gpu-models, pods, "
      "none).\n"
      "# TYPE tidal_extender_snapshot_nodes_by_source gauge\n";
  for (const auto& [key, n] : counts)
    *out += "tidal_extender_snapshot_nodes_by_source{dimension=\"" + std::string(key.first) +
            "\",source=\"" + EscapeLabelValue(key.second) + "\"} " + std::to_string(n) + "\n";
}
}  // namespace

std::string Server::MetricsText() {
  const auto view = impl_->store.Load();
  const TimeMs now = impl_->clock.NowMs();
  impl_->extender.ObserveStage(now, *view);
  std::string out;
  AppendCounterFamily(impl_->metrics.requests, &out);
  AppendHistogramFamily(impl_->metrics.duration, &out);
  AppendCounterFamily(impl_->metrics.rejections, &out);
  AppendCounterFamily(impl_->metrics.stage_transitions, &out);
  AppendCounterFamily(impl_->metrics.binds, &out);
  AppendHistogramFamily(impl_->metrics.bind_duration, &out);
  AppendCounterFamily(impl_->metrics.bind_retries, &out);
  AppendCounterFamily(impl_->metrics.prioritize_reuse, &out);
  AppendCounterFamily(impl_->metrics.http_errors, &out);
  const double age = view->health.last_success_ms ? (now - view->health.last_success_ms) / 1000.0
                                                  : std::numeric_limits<double>::infinity();
  AppendGauge("tidal_extender_snapshot_age_seconds",
              "Age of the metrics snapshot requests read (+Inf before the first).", age, &out);
  AppendGauge("tidal_extender_fallback_stage",
              "0 normal, 1 and 2 the fallback stages (docs/design.md#fallback).",
              impl_->metrics.fallback_stage.Get(), &out);
  AppendGauge("tidal_extender_fallback_golden_pool_empty",
              "1 while fallback stage 2 is due but no node is in the golden pool (stage 1 "
              "goes on).",
              impl_->metrics.golden_pool_empty.Get(), &out);
  AppendGauge(
      "tidal_extender_unknown_nodes",
      "Candidates of the last filter request whose own series are missing, unusable or old.",
      impl_->metrics.unknown_nodes.Get(), &out);
  AppendGauge("tidal_extender_snapshot_nodes", "Nodes with agent series in the snapshot.",
              view->snapshot ? static_cast<double>(view->snapshot->nodes.size()) : 0, &out);
  AppendSourceCounts(view->snapshot.get(), &out);
  AppendGauge("tidal_extender_metrics_source_failures",
              "Failed fetches from the metrics source since start-up.",
              static_cast<double>(view->health.failures), &out);
  AppendGauge("tidal_extender_metrics_fetch_duration_seconds",
              "Time the last fetch from the metrics source took, failed or not.",
              view->health.last_fetch_duration_ms / 1000.0, &out);
  AppendGauge("tidal_extender_snapshot_unusable_nodes",
              "Nodes with series whose reading is doubtful (NaN, infinite, negative, "
              "disagreeing duplicates) and so unknown.",
              static_cast<double>(view->health.unusable_nodes), &out);
  AppendGauge("tidal_extender_series_nodes_not_requested",
              "Nodes with series in the snapshot that the last filter request did not name.",
              static_cast<double>(impl_->extender.NodesNotRequested(*view)), &out);
  AppendGauge("tidal_extender_reservations_in_flight",
              "Placements not yet visible in metrics, counted in filter and score.",
              impl_->metrics.reservations_in_flight.Get(), &out);
  if (!impl_->options.build.version.empty()) AppendBuildInfo(impl_->options.build, &out);
  return out;
}

namespace {
// A listener, HTTPS when a certificate is given, with the limits and deadlines
// both listeners share: a slow or idle client is dropped after 5 s whichever
// address it came to.
Status MakeListener(const ServerOptions& o, int threads, std::size_t max_body,
                    std::unique_ptr<httplib::Server>* out) {
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    if (o.tls_cert_file.empty() || o.tls_key_file.empty())
      return Status::Error("--tls-cert and --tls-key go together");
    auto tls =
        std::make_unique<httplib::SSLServer>(o.tls_cert_file.c_str(), o.tls_key_file.c_str());
    if (!tls->is_valid())
      return Status::Error("cannot load the TLS certificate " + o.tls_cert_file + " and key " +
                           o.tls_key_file);
    *out = std::move(tls);
  } else {
    *out = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = **out;
  threads = threads > 0 ? threads : 1;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_tcp_nodelay(true);
  // httplib's default adds SO_REUSEPORT, with which a second listener on the same
  // port (the other listener, another tidal serve) would silently share the
  // connections; a busy port must be an error.
  s.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.set_keep_alive_max_count(10'000);
  s.set_keep_alive_timeout(30);
  s.set_payload_max_length(max_body);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  return Status::Fits();
}

// A handler that throws (std::bad_alloc under the memory limit, a bug) would get
// httplib's empty 500, seen nowhere: it is answered with a short text instead,
// logged with its path and what(), and counted. The path label is one of the
// routes (the body is read before the route is matched: any path can throw).
void OnException(ExtenderMetrics& metrics, spdlog::logger& log, const httplib::Request& req,
                 httplib::Response& res, std::exception_ptr ep) {
  res.status = 500;
  const char* reason = "unknown";
  std::string what = "not a std::exception";
  try {
    std::rethrow_exception(ep);
  } catch (const std::bad_alloc& e) {
    reason = "bad_alloc";
    what = "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    reason = "exception";
    what = e.what();
  } catch (...) {
  }
  static constexpr std::string_view kRoutes[] = {
      "/filter", "/prioritize", "/bind", "/healthz", "/readyz", "/metrics", "/debug/nodes"};
  std::string_view path = "other";
  for (std::string_view r : kRoutes)
    if (req.path == r) path = r;
  // Under memory pressure each step may throw again: the status is set already.
  try {
    metrics.http_errors.With({std::string(path), reason}).Add(1);
    log.error("{} {}: answered 500: {}", req.method, QuoteInput(req.path), what);
    res.set_content("tidal: internal error on " + std::string(path) + ": " + what + "\n",
                    "text/plain");
  } catch (...) {
  }
}

// Binds host:port (0: any free port) and serves on `thread`; returns once the
// accept loop runs (httplib 0.11 loses a stop() that comes before it).
Status Listen(httplib::Server& s, const std::string& host, int port, std::thread* thread,
              int* bound) {
  errno = 0;
  *bound = port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  // bind(2)'s errno survives httplib's cleanup: "Address already in use" for a
  // port another process (a second tidal serve) holds.
  const int err = errno;
  if (*bound < 0)
    return Status::Error("cannot listen on " + host + ":" + std::to_string(port) +
                         (err ? std::string(": ") + std::strerror(err) : std::string()));
  *thread = std::thread([&s] { s.listen_after_bind(); });
  for (int i = 0; i < 1000 && !s.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status::Fits();
}
}  // namespace

Status Server::Start() {
  auto& im = *impl_;
  if (Status st = MakeListener(im.options, im.options.threads, im.options.max_body_bytes, &im.http);
      !st.ok())
    return st;
  httplib::Server& s = *im.http;
  auto on_exception = [this](const httplib::Request& req, httplib::Response& res,
                             std::exception_ptr ep) {
    OnException(impl_->metrics,
                impl_->options.log ? *impl_->options.log : *spdlog::default_logger_raw(), req, res,
                ep);
  };
  s.set_exception_handler(on_exception);

  // Until the nodes and pods the API server has are in the view (device slots, the
  // GPUs bound pods hold), a decision could promise a GPU twice: the verbs answer
  // an error, which kube-scheduler takes as a failed attempt and retries.
  auto verb = [this](bool filter) {
    return [this, filter](const httplib::Request& req, httplib::Response& res) {
      Reply r;
      if (std::string why = impl_->NotReady(); !why.empty()) {
        r = NotReadyReply(filter ? "filter" : "prioritize", why);
      } else {
        r = filter ? impl_->extender.Filter(req.body) : impl_->extender.Prioritize(req.body);
      }
      res.status = r.http_status;
      res.set_content(std::move(r.body), r.http_status == 200 ? "application/json" : "text/plain");
    };
  };
  s.Post("/filter", verb(true));
  s.Post("/prioritize", verb(false));
  if (im.binder) {
    s.Post("/bind", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string why = impl_->NotReady();
      Reply r = why.empty() ? impl_->binder->Bind(req.body) : NotReadyReply("bind", why);
      res.status = r.http_status;
      res.set_content(std::move(r.body), "application/json");
    });
  }
  // Health, readiness and /metrics: on the verbs' listener (loopback, as before)
  // and on the second one when there is one.
  auto add_ops_routes = [this](httplib::Server& on) {
    on.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    on.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      // Ready once the first fetch has finished: a snapshot, or the fallback, is in place.
      const auto view = impl_->store.Load();
      if (view->health.attempts == 0) {
        res.status = 503;
        res.set_content("waiting for the first metrics fetch\n", "text/plain");
        return;
      }
      if (impl_->not_ready) {
        if (std::string why = impl_->not_ready(); !why.empty()) {
          res.status = 503;
          res.set_content(why + "\n", "text/plain");
          return;
        }
      }
      res.set_content(view->snapshot ? "ok\n" : "ok (fallback: no snapshot yet)\n", "text/plain");
    });
    on.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
    });
  };
  add_ops_routes(s);
  // Node names and loads: only where the verbs are (reach it with kubectl port-forward).
  s.Get("/debug/nodes", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(impl_->extender.DebugNodes() + "\n", "application/json");
  });

  if (!im.options.metrics_host.empty()) {
    if (Status st = MakeListener(im.options, im.options.metrics_threads,
                                 im.options.metrics_max_body_bytes, &im.ops);
        !st.ok())
      return st;
    add_ops_routes(*im.ops);
    im.ops->set_exception_handler(on_exception);
  }
  if (Status st = Listen(s, im.options.host, im.options.port, &im.thread, &im.port); !st.ok())
    return st;
  if (im.ops) {
    if (Status st = Listen(*im.ops, im.options.metrics_host, im.options.metrics_port,
                           &im.ops_thread, &im.ops_port);
        !st.ok()) {
      Stop();
      return st;
    }
  }
  return Status::Fits();
}

void Server::Stop() {
  if (impl_->http) impl_->http->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->ops) impl_->ops->stop();
  if (impl_->ops_thread.joinable()) impl_->ops_thread.join();
}

int Server::port() const { return impl_->port; }
int Server::metrics_port() const { return impl_->ops_port; }

}  // namespace tidal::extender
