#include "tidal/extender/server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <string_view>

#include "tidal/core/exposition.h"
#include "tidal/core/text.h"

namespace tidal::extender {

struct Server::Impl {
  Extender& extender;
  ExtenderMetrics& metrics;
  const ViewStore& store;
  const Clock& clock;
  ServerOptions options;
  std::unique_ptr<http::Server> http;
  Binder* binder = nullptr;
  std::function<std::string()> not_ready;
  std::atomic<bool> ready{false};  // latched: once ready, the verbs never ask again
  // The second listener: probes and scrapes only.
  std::unique_ptr<http::Server> ops{};

  // Why the verbs cannot decide yet ("" when they can).
  std::string NotReady() {
    if (ready.load(std::memory_order_relaxed) || !not_ready) return "";
    std::string why = not_ready();
    if (why.empty()) ready.store(true);
    return why;
  }

  // Health, readiness and /metrics: on the verbs' listener and on the second one.
  void AddOpsRoutes(Server& server, http::Server& on) {
    on.Route("GET", "/healthz",
             [](const http::Request&, http::Response& res) { res.Set("ok\n", "text/plain"); });
    on.Route("GET", "/readyz", [this](const http::Request&, http::Response& res) {
      // Ready once the first fetch has finished: a snapshot, or the fallback, is in place.
      const auto view = store.Load();
      if (view->health.attempts == 0) {
        res.status = 503;
        res.Set("waiting for the first metrics fetch\n", "text/plain");
        return;
      }
      if (not_ready) {
        if (std::string why = not_ready(); !why.empty()) {
          res.status = 503;
          res.Set(why + "\n", "text/plain");
          return;
        }
      }
      res.Set(view->snapshot ? "ok\n" : "ok (fallback: no snapshot yet)\n", "text/plain");
    });
    on.Route("GET", "/metrics", [&server](const http::Request&, http::Response& res) {
      res.Set(server.MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
};

Server::Server(Extender& extender, ExtenderMetrics& metrics, const ViewStore& store,
               const Clock& clock, ServerOptions options)
    : impl_(new Impl{extender, metrics, store, clock, std::move(options), nullptr, nullptr, {}}) {}

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
  AppendCounterFamily(impl_->metrics.look_ahead, &out);
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
  if (impl_->http) out += http::CountersText("tidal_extender", impl_->http->counters());
  if (!impl_->options.build.version.empty()) AppendBuildInfo(impl_->options.build, &out);
  return out;
}

namespace {
http::Options ListenerOptions(const ServerOptions& o, std::string host, int port, int threads,
                              std::size_t max_body) {
  http::Options h;
  h.host = std::move(host);
  h.port = port;
  h.limits.threads = threads > 0 ? threads : 1;
  h.limits.max_body_bytes = max_body;
  h.tls_cert_file = o.tls_cert_file;
  h.tls_key_file = o.tls_key_file;
  h.tls_client_ca_file = o.tls_client_ca_file;
  return h;
}

// A handler that throws (std::bad_alloc under the memory limit, a bug) is
// answered with a short text, logged with its path and what(), and counted. The
// path label is one of the routes.
void OnException(ExtenderMetrics& metrics, spdlog::logger& log, const http::Request& req,
                 http::Response& res, std::exception_ptr ep) {
  res.status = 500;
  const http::Thrown thrown = http::Classify(ep);
  static constexpr std::string_view kRoutes[] = {
      "/filter", "/prioritize", "/bind", "/healthz", "/readyz", "/metrics", "/debug/nodes"};
  std::string_view path = "other";
  for (std::string_view r : kRoutes)
    if (req.path == r) path = r;
  // Under memory pressure each step may throw again: the status is set already.
  try {
    metrics.http_errors.With({std::string(path), thrown.reason}).Add(1);
    log.error("{} {}: answered 500: {}", req.method, QuoteInput(req.path), thrown.what);
    res.Set("tidal: internal error on " + std::string(path) + ": " + thrown.what + "\n",
            "text/plain");
  } catch (...) {
  }
}

}  // namespace

Status Server::Start() {
  auto& im = *impl_;
  const ServerOptions& o = im.options;
  auto on_exception = [this](const http::Request& req, http::Response& res, std::exception_ptr ep) {
    OnException(impl_->metrics,
                impl_->options.log ? *impl_->options.log : *spdlog::default_logger_raw(), req, res,
                ep);
  };
  http::Options verbs = ListenerOptions(o, o.host, o.port, o.threads, o.max_body_bytes);
  verbs.on_exception = on_exception;
  im.http = std::make_unique<http::Server>(std::move(verbs));
  http::Server& s = *im.http;

  // Until the nodes and pods the API server has are in the view (device slots, the
  // GPUs bound pods hold), a decision could promise a GPU twice: the verbs answer
  // an error, which kube-scheduler takes as a failed attempt and retries.
  auto verb = [this](bool filter) {
    return [this, filter](const http::Request& req, http::Response& res) {
      Reply r;
      if (std::string why = impl_->NotReady(); !why.empty()) {
        r = NotReadyReply(filter ? "filter" : "prioritize", why);
      } else {
        r = filter ? impl_->extender.Filter(req.body) : impl_->extender.Prioritize(req.body);
      }
      res.status = r.http_status;
      res.Set(std::move(r.body), r.http_status == 200 ? "application/json" : "text/plain");
    };
  };
  s.Route("POST", "/filter", verb(true));
  s.Route("POST", "/prioritize", verb(false));
  if (im.binder) {
    s.Route("POST", "/bind", [this](const http::Request& req, http::Response& res) {
      const std::string why = impl_->NotReady();
      Reply r = why.empty() ? impl_->binder->Bind(req.body) : NotReadyReply("bind", why);
      res.status = r.http_status;
      res.Set(std::move(r.body), "application/json");
    });
  }
  im.AddOpsRoutes(*this, s);
  // Node names and loads: only where the verbs are (reach it with kubectl port-forward).
  s.Route("GET", "/debug/nodes", [this](const http::Request&, http::Response& res) {
    res.Set(impl_->extender.DebugNodes() + "\n", "application/json");
  });
  if (!o.metrics_host.empty()) {
    http::Options ops = ListenerOptions(o, o.metrics_host, o.metrics_port, o.metrics_threads,
                                        o.metrics_max_body_bytes);
    ops.tls_client_ca_file.clear();  // probes and Prometheus present no client certificate
    ops.on_exception = on_exception;
    im.ops = std::make_unique<http::Server>(std::move(ops));
    im.AddOpsRoutes(*this, *im.ops);
  }
  if (Status st = s.Start(); !st.ok()) return st;
  if (im.ops) {
    if (Status st = im.ops->Start(); !st.ok()) {
      Stop();
      return st;
    }
  }
  return Status::Ok();
}

void Server::Stop() {
  if (impl_->http) impl_->http->Stop();
  if (impl_->ops) impl_->ops->Stop();
}

int Server::port() const { return impl_->http ? impl_->http->port() : -1; }
int Server::metrics_port() const { return impl_->ops ? impl_->ops->port() : -1; }

}  // namespace tidal::extender
