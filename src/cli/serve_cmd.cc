// tidal serve: the scheduler extender beside a stock kube-scheduler.
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/daemon_signals.h"
#include "cli/version.h"
#include "tidal/extender/binder.h"
#include "tidal/extender/kube_sync.h"
#include "tidal/extender/refresher.h"
#include "tidal/extender/server.h"
#include "tidal/kube/client.h"
#include "tidal/kube/config.h"
#include "tidal/kube/informer.h"
#include "tidal/metrics/snapshot.h"
#include "tidal/policy/config.h"

namespace tidal::cli {
namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:8890";
  // Empty: no second listener; the probes and /metrics are on --listen only.
  std::string metrics_listen;
  std::string config;
  std::string prometheus = "http://127.0.0.1:9090";
  std::string prometheus_ca, prometheus_token_file;
  std::string node_label = "node";
  int threads = 8;
  std::size_t max_body_bytes = 64u << 20;
  // Threads working on one large request; the default: the cores, up to 4.
  int parallelism = 0;
  std::string log_level = "info";
  std::string tls_cert, tls_key, tls_client_ca;
  bool in_cluster = false;
  std::string kubeconfig, kube_context;
};

struct ListenAddress {
  std::string host;
  int port = 0;
};

// host:port, :port (every IPv4 interface) or [IPv6]:port (e.g. [::]:8891).
ListenAddress ParseListen(const std::string& flag, const std::string& text) {
  const std::string expected = ": expected host:port, :port (every interface) or [IPv6]:port";
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw InputError{flag + " " + text + expected};
  ListenAddress a;
  a.host = text.substr(0, colon);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  else if (a.host.find_first_of("[]:") != std::string::npos)
    throw InputError{flag + " " + text + expected};
  if (a.host.empty()) a.host = "0.0.0.0";
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    throw InputError{flag + " " + text + ": the port is not a number from 0 to 65535"};
  a.port = std::stoi(port);
  return a;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

extender::ServerOptions ServerOptionsFrom(const ServeFlags& f) {
  extender::ServerOptions so;
  const ListenAddress verbs = ParseListen("--listen", f.listen);
  so.host = verbs.host;
  so.port = verbs.port;
  if (!f.metrics_listen.empty()) {
    const ListenAddress ops = ParseListen("--metrics-listen", f.metrics_listen);
    if (ops.port != 0 && ops.port == verbs.port)
      throw InputError{"--metrics-listen " + f.metrics_listen + ": the port of --listen " +
                       f.listen + "; expected another port"};
    so.metrics_host = ops.host;
    so.metrics_port = ops.port;
  }
  so.threads = f.threads;
  so.max_body_bytes = f.max_body_bytes;
  so.tls_cert_file = f.tls_cert;
  so.tls_key_file = f.tls_key;
  so.tls_client_ca_file = f.tls_client_ca;
  so.build = TidalBuild();
  return so;
}

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& log_level) {
  auto log =
      std::make_shared<spdlog::logger>("tidal", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  const auto level = spdlog::level::from_str(log_level);
  if (level == spdlog::level::off && log_level != "off")
    throw InputError{"--log-level " + log_level +
                     ": expected trace, debug, info, warn, error or off"};
  log->set_level(level);
  return log;
}

// The process's wiring, start to stop, in one function on purpose: every object
// here lives until the signal and is destroyed in reverse order of construction
// (the informers and binder before the extender they call, the server before the
// refresher); spread over helpers, those lifetimes would be too.
int RunServe(const ServeFlags& f) {
  const PolicyConfig config =
      f.config.empty() ? DefaultPolicyConfig() : LoadPolicyConfigFile(f.config);
  extender::ServerOptions so = ServerOptionsFrom(f);
  auto log = MakeLogger(f.log_level);
  so.log = log;

  prom::ClientOptions po;
  po.url = f.prometheus;
  po.timeout_ms = config.query_timeout_ms;
  po.ca_file = f.prometheus_ca;
  po.bearer_token_file = f.prometheus_token_file;
  PrometheusSource prometheus(std::make_unique<prom::PrometheusClient>(po), f.node_label,
                              config.metrics_source);
  // The NVLink competition index from the pod watch where the agent's series do
  // not give it, and always with NVLink from dcgm-exporter (docs/metrics-sources.md).
  PodCompetitionSource source(prometheus, config.nvlink.slots_per_gpu,
                              config.metrics_source.nvlink == MetricsSourceKind::kDcgmExporter);

  // Signals are taken synchronously by this thread; block them before any thread starts.
  const sigset_t sigs = TakeStopSignals();

  // The Kubernetes API: node and pod watches, and /bind with reservations.
  std::unique_ptr<kube::KubeClient> api;
  if (f.in_cluster && !f.kubeconfig.empty())
    throw InputError{"--in-cluster and --kubeconfig: choose one"};
  if (f.in_cluster) {
    api = std::make_unique<kube::KubeClient>(
        kube::InClusterEndpoint(kube::ProcessEnv(), kube::kServiceAccountDir));
  } else if (!f.kubeconfig.empty()) {
    api = std::make_unique<kube::KubeClient>(kube::LoadKubeconfig(f.kubeconfig, f.kube_context));
  }

  SystemClock clock;
  extender::ViewStore store;
  extender::NodeCatalog catalog;
  extender::ExtenderMetrics metrics;
  ReservationOptions ro;
  ro.ttl_ms = config.reservations.ttl_ms;
  ro.visible_after_ms = config.reservations.visible_after_ms;
  ro.claims = config.reservations.claims;
  extender::InFlight inflight(ro, config.nvlink.slots_per_gpu);
  const int parallelism =
      f.parallelism > 0 ? f.parallelism
                        : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  extender::Extender ext(config, store, clock, log, &metrics, parallelism);
  extender::Refresher refresher(source, store, catalog, clock, config.metric_cache_ttl_ms, log);
  refresher.AttachReservations(&inflight);
  refresher.OnNodesBuilt([&ext](const auto& nodes) { ext.SupplyWorkload(nodes); });
  refresher.WarnSlowerThan(config.query_timeout_ms / 2);
  // Prediction (docs/design.md#prediction): the load forecast and learned memory estimates.
  std::unique_ptr<LoadForecaster> forecaster;
  if (config.load_forecast.enabled) {
    forecaster = std::make_unique<LoadForecaster>(config.load_forecast);
    refresher.AttachForecaster(forecaster.get());
  }
  std::unique_ptr<MemoryLearner> learner;
  std::unique_ptr<extender::PodPeakTracker> peaks;
  if (config.memory_learning.enabled) {
    learner = std::make_unique<MemoryLearner>(config.memory_learning);
    if (!config.memory_learning.file.empty()) {
      // A corrupt file is a start-up error: silently relearning could hide it.
      std::string warning;
      if (Status st = LoadLearnedMemory(config.memory_learning.file, learner.get(), &warning);
          !st.ok())
        throw InputError{"memoryLearning.file: " + st.reason()};
      if (!warning.empty()) log->warn("memory learning: {}", warning);
      log->info("memory learning: {} workloads from {}", learner->keys(),
                config.memory_learning.file);
    }
    peaks = std::make_unique<extender::PodPeakTracker>(*learner);
    refresher.AttachLearning(peaks.get(), learner.get(), config.memory_learning.file);
    ext.SetLearnedMemory(learner.get());
    if (!api) log->warn("memory learning: needs the pod watch (--in-cluster or --kubeconfig)");
  }
  extender::Server server(ext, metrics, store, clock, so);

  if (!api && config.metrics_source.nvlink == MetricsSourceKind::kDcgmExporter)
    log->warn(
        "metricsSource.nvlink dcgm-exporter: the NVLink competition index is counted from the pod "
        "watch (--in-cluster or --kubeconfig); without it only in-flight reservations count");
  std::unique_ptr<extender::KubeSync> sync;
  std::unique_ptr<kube::Informer> nodes_informer, pods_informer, pending_informer;
  std::unique_ptr<extender::PendingPods> pending;
  std::unique_ptr<extender::Binder> binder;
  if (api) {
    sync =
        std::make_unique<extender::KubeSync>(catalog, &inflight, log, peaks.get(), config.nvlink);
    source.CountPodsWith([s = sync.get()] { return s->NvlinkPods(); });
    sync->OnGpuChoiceCarriedOut([&ext] { ext.NoteGpuChoiceCarriedOut(); });
    nodes_informer =
        std::make_unique<kube::Informer>(*api, "/api/v1/nodes", sync->node_handler(), log);
    kube::InformerOptions pod_options;
    pod_options.field_selector = "spec.nodeName!=";  // bound pods hold resources
    pods_informer = std::make_unique<kube::Informer>(*api, "/api/v1/pods", sync->pod_handler(), log,
                                                     pod_options);
    if (config.look_ahead) {
      // The look-ahead's queue: the unbound pods (docs/design.md#looking-ahead-in-serve).
      pending = std::make_unique<extender::PendingPods>(log);
      kube::InformerOptions pending_options;
      pending_options.field_selector = "spec.nodeName=";
      pending_informer =
          std::make_unique<kube::Informer>(*api, "/api/v1/pods", *pending, log, pending_options);
      ext.SetPendingPods(pending.get(),
                         [&inflight](const std::string& pod) { return inflight.Holds(pod); });
    }
    extender::BinderOptions bo;
    bo.reservations = config.reservations.enabled;
    binder = std::make_unique<extender::Binder>(
        ext, *api, &inflight, [&refresher] { refresher.PublishReservations(); }, clock,
        [](TimeMs ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }, log,
        &metrics, bo);
    server.SetBinder(binder.get());
    // Ready once a published view was built from both lists: before that, the
    // device slots and the GPUs bound pods hold are unknown (after a restart, a
    // GPU could be promised again).
    server.SetReadiness(
        [&, listed_at = std::make_shared<std::atomic<std::uint64_t>>(0)]() -> std::string {
          if (!nodes_informer->synced()) return "waiting for the first list of nodes";
          if (!pods_informer->synced()) return "waiting for the first list of pods";
          std::uint64_t expected = 0;
          listed_at->compare_exchange_strong(expected, catalog.generation());
          if (store.Load()->catalog_generation < listed_at->load())
            return "waiting for a view of the listed nodes and pods";
          return "";
        });
  }
  if (Status s = server.Start(); !s.ok()) throw InputError{s.reason()};
  refresher.Start();
  if (api) {
    nodes_informer->Start();
    pods_informer->Start();
    if (pending_informer) pending_informer->Start();
    log->info("tidal serve: watching nodes and pods at {}, serving /bind", api->Describe());
  }
  const char* scheme = so.tls_cert_file.empty() ? "http" : "https";
  if (so.tls_client_ca_file.empty() && !IsLoopback(so.host))
    log->warn(
        "tidal serve: the verbs listen on {} and any client that reaches it can filter and bind: "
        "give --tls-client-ca (and kube-scheduler's extender tlsConfig a client certificate), or "
        "keep --listen on loopback",
        so.host);
  log->info("tidal serve: listening on {}://{}:{}, metrics from {} every {} ms (node label {})",
            scheme, so.host, server.port(), source.Describe(), config.metric_cache_ttl_ms,
            f.node_label);
  if (server.metrics_port() >= 0)
    log->info("tidal serve: /healthz, /readyz and /metrics also on {}://{}:{}", scheme,
              so.metrics_host, server.metrics_port());
  int sig = 0;
  sigwait(&sigs, &sig);
  log->info("tidal serve: signal {}, stopping", sig);
  server.Stop();
  if (api) {
    nodes_informer->Stop();
    pods_informer->Stop();
    if (pending_informer) pending_informer->Stop();
  }
  refresher.Stop();
  return 0;
}

}  // namespace

void AddServe(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "run the scheduler extender (load-aware-scheduler)");
  cmd->add_option("--listen", f->listen,
                  "host:port for the extender verbs, /debug/nodes, /metrics, /healthz, /readyz "
                  "(keep it on loopback: the verbs bind pods)")
      ->capture_default_str();
  cmd->add_option("--metrics-listen", f->metrics_listen,
                  "a second host:port (:8891 is every interface) serving only /healthz, /readyz "
                  "and /metrics, for the kubelet's probes and Prometheus; default: none");
  cmd->add_option("--config", f->config, "policy config (YAML); default: the built-in defaults");
  cmd->add_option("--prometheus", f->prometheus, "Prometheus (or compatible) query API base URL")
      ->capture_default_str();
  cmd->add_option("--prometheus-ca", f->prometheus_ca,
                  "CA file to verify an https Prometheus with");
  cmd->add_option("--prometheus-token-file", f->prometheus_token_file,
                  "bearer token file for Prometheus (re-read on every query)");
  cmd->add_option("--node-label", f->node_label,
                  "label of the agents' series naming the node (dcgm-exporter's and "
                  "node-exporter's: the config's metricsSource)")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "HTTP worker threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--max-body-bytes", f->max_body_bytes,
                  "largest request body taken (decoded bytes; 413 and the connection closed "
                  "above): a 5 000-node Nodes payload is about 70 MB, NodeNames about 0.1 MB")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  cmd->add_option("--parallelism", f->parallelism,
                  "threads that work on one request of over 512 nodes (0: the cores, up to 4)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd->add_option("--log-level", f->log_level,
                  "trace, debug (one line per decision), info, warn, error")
      ->capture_default_str();
  cmd->add_option("--tls-cert", f->tls_cert, "serve HTTPS with this certificate (PEM)");
  cmd->add_option("--tls-key", f->tls_key, "and this key (PEM)");
  cmd->add_option("--tls-client-ca", f->tls_client_ca,
                  "with HTTPS, take the verbs only from clients with a certificate this CA (PEM) "
                  "signed: kube-scheduler's extender tlsConfig certFile/keyFile");
  cmd->add_flag("--in-cluster", f->in_cluster,
                "use the pod's service account to watch nodes and pods and to serve /bind");
  cmd->add_option("--kubeconfig", f->kubeconfig,
                  "a kubeconfig for the same (outside a cluster, e.g. kind)");
  cmd->add_option("--kube-context", f->kube_context, "the kubeconfig context; default: current");
  cmd->callback([f] {
    const int rc = RunServe(*f);
    if (rc != 0) std::exit(rc);
  });
}

}  // namespace tidal::cli
