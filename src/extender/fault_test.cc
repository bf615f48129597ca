// The extender over a misbehaving Prometheus (docs/design.md#freshness): the refresher, the HTTP
// server and PrometheusSource in-process against a fake query API on loopback
// that can be down, hang, be slow, answer 500 or truncated JSON, or send NaN,
// infinite, unknown-node and duplicated series. In every case filter and
// prioritize keep answering while the fault lasts (no request waits on a fetch),
// the fault shows in /metrics and the log, and it all recovers when the fault
// ends. Latency under these faults is measured by bench/extender-faults.sh, not
// here (tests assert what happens, not how fast).
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/base_sink.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "testing/process.h"
#include "testing/tls.h"
#include "tidal/extender/refresher.h"
#include "tidal/extender/server.h"
#include "tidal/metrics/snapshot.h"

namespace tidal::extender {
namespace {

using nlohmann::json;
using tidal::testing::Eventually;

enum class Fault {
  kNone,
  kDown,
  kHang,
  kSlow,
  kHttp500,
  kTruncated,
  kNaN,
  kInf,
  kUnknownNodes,
  kDuplicated
};

// The query API of Prometheus for a few nodes of 2 × 24 GiB GPUs at 10 %, with
// one fault at a time. kHang holds every query until the fault changes; kSlow
// holds each for `delay_ms` and then answers.
class FakePrometheus {
 public:
  explicit FakePrometheus(std::vector<std::string> nodes) : nodes_(std::move(nodes)) {}
  ~FakePrometheus() { Stop(); }

  // On `port` (0: any free one); false when it cannot listen.
  bool Start(int port = 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = false;
    }
    http_ = std::make_unique<httplib::Server>();
    // Hung queries each hold a worker until the fault ends; enough that new ones still arrive.
    http_->new_task_queue = [] { return new httplib::ThreadPool(64); };
    http_->Post("/api/v1/query",
                [this](const httplib::Request& req, httplib::Response& res) { Answer(req, res); });
    port_ = port == 0 ? http_->bind_to_any_port("127.0.0.1")
                      : (http_->bind_to_port("127.0.0.1", port) ? port : -1);
    if (port_ < 0) return false;
    thread_ = std::thread([this] { http_->listen_after_bind(); });
    // httplib 0.11 loses a stop() that comes before its listen loop runs.
    return Eventually([this] { return http_->is_running(); }, 10);
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (http_) http_->stop();
    if (thread_.joinable()) thread_.join();
    http_.reset();
  }
  void SetFault(Fault f, TimeMs delay_ms = 0) {
    if (f == Fault::kDown) {
      Stop();
    } else if (fault_ == Fault::kDown) {
      Start(port_);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      fault_ = f;
      delay_ms_ = delay_ms;
    }
    cv_.notify_all();
  }
  int port() const { return port_; }
  // Queries that have arrived so far.
  std::uint64_t arrived() const { return arrived_.load(); }

 private:
  void Answer(const httplib::Request& req, httplib::Response& res) {
    arrived_.fetch_add(1);
    std::unique_lock<std::mutex> lock(mu_);
    const Fault f = fault_;
    if (f == Fault::kHang || f == Fault::kSlow) {
      auto done = [&] { return stopping_ || fault_ != f; };
      if (f == Fault::kHang) {
        cv_.wait(lock, done);
      } else {
        cv_.wait_for(lock, std::chrono::milliseconds(delay_ms_), done);
      }
    }
    lock.unlock();
    const bool times = req.get_param_value("query").find("timestamp(") != std::string::npos;
    std::string body = Body(f, times);
    if (f == Fault::kHttp500) {
      res.status = 500;
      res.set_content("internal server error\n", "text/plain");
    } else {
      if (f == Fault::kTruncated) body.resize(body.size() / 2);
      res.set_content(body, "application/json");
    }
  }

  std::string Body(Fault f, bool sample_times) const {
    const double now_s =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<std::string> nodes = nodes_;
    if (f == Fault::kUnknownNodes)
      for (const char* ghost : {"ghost-0", "ghost-1", "ghost-2"}) nodes.emplace_back(ghost);
    json result = json::array();
    auto add = [&](json metric, const std::string& value) {
      result.push_back({{"metric", std::move(metric)}, {"value", {now_s, value}}});
    };
    const double total = 24.0 * (1LL << 30);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::string& n = nodes[i];
      if (sample_times) {
        add({{"node", n}}, Num(now_s));
        continue;
      }
      const bool faulty = i == 1;  // the second node carries the bad values
      for (int g = 0; g < 2; ++g) {
        const std::string id = std::to_string(g);
        std::string used = Num(0.1 * total);
        if (faulty && g == 0 && f == Fault::kNaN) used = "NaN";
        add({{"__name__", "ai_gpu_memory_used_bytes"}, {"node", n}, {"gpu_id", id}}, used);
        if (faulty && g == 0 && f == Fault::kDuplicated)  // a second scrape job, another value
          add({{"__name__", "ai_gpu_memory_used_bytes"},
               {"node", n},
               {"gpu_id", id},
               {"instance", "other:9410"}},
              Num(0.5 * total));
        add({{"__name__", "ai_gpu_memory_total_bytes"}, {"node", n}, {"gpu_id", id}}, Num(total));
      }
      add({{"__name__", "ai_storage_await_seconds"}, {"node", n}, {"device", "nvme0n1"}},
          faulty && f == Fault::kInf ? "+Inf" : "0.002");
      add({{"__name__", "ai_nvlink_competition_index"}, {"node", n}}, "0");
    }
    return json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}
        .dump();
  }
  static std::string Num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
  }

  const std::vector<std::string> nodes_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = -1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Fault fault_ = Fault::kNone;
  TimeMs delay_ms_ = 0;
  bool stopping_ = false;
  std::atomic<std::uint64_t> arrived_{0};
};

// The log as text, readable while the refresher thread writes to it.
class CaptureSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string Text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    text_.append(msg.payload.data(), msg.payload.size());
    text_ += '\n';
  }
  void flush_() override {}

 private:
  std::string text_;
};

const std::vector<std::string> kNodes{"n0", "n1", "n2"};

std::string Args() {
  const std::string pod =
      R"({"metadata":{"name":"train","namespace":"ml","uid":"u1","annotations":{"ai.gpu-memory":"4Gi"}},)"
      R"("spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";
  return R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":)" + json(kNodes).dump() + "}";
}

// The value of an unlabelled gauge in an exposition; NaN when absent.
double Gauge(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = text.find(key);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

// tidal serve's parts as serve_cmd wires them, on a short scale: metricCacheTTL
// 200 ms, queryTimeout 500 ms, stage 2 out of reach.
struct Served {
  explicit Served(FakePrometheus& prom) : sink(std::make_shared<CaptureSink>()) {
    config = DefaultPolicyConfig();
    config.metric_cache_ttl_ms = 200;
    config.query_timeout_ms = 500;
    config.fallback.stage2_after_ms = 600'000;
    log = std::make_shared<spdlog::logger>("fault", sink);
    prom::ClientOptions po;
    po.url = "http://127.0.0.1:" + std::to_string(prom.port());
    po.timeout_ms = config.query_timeout_ms;
    source =
        std::make_unique<PrometheusSource>(std::make_unique<prom::PrometheusClient>(po), "node");
    ext = std::make_unique<Extender>(config, store, clock, log, &metrics);
    refresher = std::make_unique<Refresher>(*source, store, catalog, clock,
                                            config.metric_cache_ttl_ms, log);
    refresher->WarnSlowerThan(config.query_timeout_ms / 2);
    ServerOptions so;
    so.port = 0;
    so.threads = 4;
    server = std::make_unique<Server>(*ext, metrics, store, clock, so);
  }
  ~Served() {
    server->Stop();
    refresher->Stop();
  }
  bool Start() {
    if (!server->Start().ok()) return false;
    refresher->Start();
    return true;
  }
  std::string Metrics() {
    httplib::Client cli("127.0.0.1", server->port());
    auto r = cli.Get("/metrics");
    return r && r->status == 200 ? "\n" + r->body : "";
  }
  // One filter and one prioritize call, both answered with a whole verdict for
  // every candidate; "" or what was wrong.
  std::string FilterAndPrioritize() {
    httplib::Client cli("127.0.0.1", server->port());
    cli.set_read_timeout(30, 0);  // generous: a request waiting on a fetch would still show
    auto f = cli.Post("/filter", Args(), "application/json");
    if (!f || f->status != 200) return "filter not answered";
    const json fj = json::parse(f->body, nullptr, false);
    if (fj.is_discarded() || fj["Error"] != "") return "filter error: " + f->body;
    const std::size_t answered =
        fj["NodeNames"].size() + fj["FailedNodes"].size() + fj["FailedAndUnresolvableNodes"].size();
    if (answered != kNodes.size()) return "filter did not answer every node: " + f->body;
    auto p = cli.Post("/prioritize", Args(), "application/json");
    if (!p || p->status != 200) return "prioritize not answered";
    const json pj = json::parse(p->body, nullptr, false);
    if (pj.is_discarded() || pj.size() != kNodes.size()) return "prioritize: " + p->body;
    return "";
  }
  std::string Log() { return sink->Text(); }
  std::uint64_t Attempts() const { return store.Load()->health.attempts; }

  std::shared_ptr<CaptureSink> sink;
  std::shared_ptr<spdlog::logger> log;
  PolicyConfig config;
  SystemClock clock;
  std::unique_ptr<PrometheusSource> source;
  ViewStore store;
  NodeCatalog catalog;
  ExtenderMetrics metrics;
  std::unique_ptr<Extender> ext;
  std::unique_ptr<Refresher> refresher;
  std::unique_ptr<Server> server;
};

bool Healthy(const std::string& m) {
  return Gauge(m, "tidal_extender_fallback_stage") == 0 &&
         Gauge(m, "tidal_extender_snapshot_nodes") == 3 &&
         Gauge(m, "tidal_extender_snapshot_unusable_nodes") == 0 &&
         Gauge(m, "tidal_extender_series_nodes_not_requested") == 0;
}

struct FaultCase {
  const char* name;
  Fault fault;
  std::function<bool(const std::string& metrics)> shows;  // the fault in /metrics
  const char* log_during;                                 // in the log while it lasts
  const char* log_after;                                  // in the log once it has ended
  bool holds_queries;  // hang, slow: a request must be answered during a fetch
};

bool InFallback(const std::string& m) {
  return Gauge(m, "tidal_extender_fallback_stage") == 1 &&
         Gauge(m, "tidal_extender_metrics_source_failures") > 0;
}

const FaultCase kCases[] = {
    {"down", Fault::kDown, InFallback, " failed: http://127.0.0.1:", "ok, 3 nodes", false},
    {"hanging", Fault::kHang, InFallback, "/api/v1/query: Read", "ok, 3 nodes", true},
    {"slow, just within queryTimeout", Fault::kSlow,
     [](const std::string& m) {
       // Still stage 0: slow is not failing. The fetch's two queries took ≥ 2 × 450 ms.
       return Gauge(m, "tidal_extender_fallback_stage") == 0 &&
              Gauge(m, "tidal_extender_metrics_fetch_duration_seconds") >= 0.9;
     },
     "is slow: the fetch took", "fast again", true},
    {"HTTP 500", Fault::kHttp500, InFallback, "HTTP 500", "ok, 3 nodes", false},
    {"truncated JSON", Fault::kTruncated, InFallback, "response is not JSON", "ok, 3 nodes", false},
    {"NaN value", Fault::kNaN,
     [](const std::string& m) { return Gauge(m, "tidal_extender_snapshot_unusable_nodes") == 1; },
     "= nan: expected a finite value", "usable again", false},
    {"infinite value", Fault::kInf,
     [](const std::string& m) { return Gauge(m, "tidal_extender_snapshot_unusable_nodes") == 1; },
     "= inf: expected a finite value", "usable again", false},
    {"series for unknown nodes", Fault::kUnknownNodes,
     [](const std::string& m) {
       return Gauge(m, "tidal_extender_series_nodes_not_requested") == 3 &&
              Gauge(m, "tidal_extender_fallback_stage") == 0;
     },
     "6 nodes with series (was 3)", "3 nodes with series (was 6)", false},
    {"duplicated series that disagree", Fault::kDuplicated,
     [](const std::string& m) { return Gauge(m, "tidal_extender_snapshot_unusable_nodes") == 1; },
     "two series disagree", "usable again", false},
};

TEST(ExtenderFaults, AnswersThroughEveryPrometheusFaultReportsItAndRecovers) {
  for (const FaultCase& tc : kCases) {
    SCOPED_TRACE(tc.name);
    FakePrometheus prom(kNodes);
    ASSERT_TRUE(prom.Start());
    Served s(prom);
    ASSERT_TRUE(s.Start());
    ASSERT_TRUE(Eventually([&] { return Healthy(s.Metrics()); }, 30)) << s.Metrics() << s.Log();
    EXPECT_EQ(s.FilterAndPrioritize(), "");

    // 90 % of queryTimeout per query: slow, yet every query answers in time.
    prom.SetFault(tc.fault, s.config.query_timeout_ms * 9 / 10);
    ASSERT_TRUE(Eventually([&] { return tc.shows(s.Metrics()); }, 30)) << s.Metrics() << s.Log();
    if (tc.holds_queries) {
      // A query arrived and no attempt has finished since: a fetch is under way. A
      // request answered before that fetch finishes did not wait on it.
      int answered_during_fetch = 0;
      for (int i = 0; i < 20 && answered_during_fetch == 0; ++i) {
        const std::uint64_t attempts = s.Attempts();
        const std::uint64_t arrived = prom.arrived();
        ASSERT_TRUE(Eventually([&] { return prom.arrived() > arrived; }, 30));
        if (s.Attempts() != attempts) continue;
        EXPECT_EQ(s.FilterAndPrioritize(), "");
        if (s.Attempts() == attempts) ++answered_during_fetch;
      }
      EXPECT_GT(answered_during_fetch, 0);
    }
    for (int i = 0; i < 5; ++i) EXPECT_EQ(s.FilterAndPrioritize(), "") << i;
    EXPECT_TRUE(tc.shows(s.Metrics())) << "the fault still shows while it lasts";
    EXPECT_NE(s.Log().find(tc.log_during), std::string::npos) << s.Log();

    prom.SetFault(Fault::kNone);
    ASSERT_TRUE(Eventually([&] { return Healthy(s.Metrics()); }, 30)) << s.Metrics() << s.Log();
    EXPECT_TRUE(Eventually([&] { return s.Log().find(tc.log_after) != std::string::npos; }, 30))
        << s.Log();
    EXPECT_EQ(s.FilterAndPrioritize(), "");
  }
}

// A handler that throws (here the readiness check, which every verb calls):
// a 500 with a body saying what happened, a log line with the path and what(),
// and the counter, whatever was thrown and on either listener.
TEST(ExtenderHttp, AnExceptionIsAnswered500LoggedAndCounted) {
  FakePrometheus prom(kNodes);
  ASSERT_TRUE(prom.Start());
  Served s(prom);
  ServerOptions so;
  so.port = 0;
  so.metrics_host = "127.0.0.1";
  so.log = s.log;
  Server server(*s.ext, s.metrics, s.store, s.clock, so);
  std::function<void()> fault;
  server.SetReadiness([&]() -> std::string {
    fault();
    return "";
  });
  ASSERT_TRUE(server.Start().ok());
  s.refresher->RefreshOnce();  // /readyz asks the readiness check after the first fetch
  struct Case {
    const char* name;
    std::function<void()> fault;
    bool ops_listener;
    const char* path;
    const char* reason;
    const char* body;
  };
  const Case cases[] = {
      {"out of memory in /filter", [] { throw std::bad_alloc(); }, false, "/filter", "bad_alloc",
       "tidal: internal error on /filter: out of memory (std::bad_alloc)\n"},
      {"a std::exception in /prioritize", [] { throw std::runtime_error("boom"); }, false,
       "/prioritize", "exception", "tidal: internal error on /prioritize: boom\n"},
      {"something else in /readyz of the second listener", [] { throw 42; }, true, "/readyz",
       "unknown", "tidal: internal error on /readyz: not a std::exception\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fault = c.fault;
    auto& counter = s.metrics.http_errors.With({c.path, c.reason});
    const double before = counter.Get();
    httplib::Client cli("127.0.0.1", c.ops_listener ? server.metrics_port() : server.port());
    auto r = std::string(c.path) == "/readyz" ? cli.Get(c.path)
                                              : cli.Post(c.path, Args(), "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body, c.body);
    EXPECT_EQ(counter.Get(), before + 1);
    const std::string line = std::string(c.path == std::string("/readyz") ? "GET" : "POST") +
                             " \"" + c.path + "\": answered 500: ";
    EXPECT_NE(s.sink->Text().find(line), std::string::npos) << s.sink->Text();
  }
  fault = [] {};
  httplib::Client cli("127.0.0.1", server.port());
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(
      m->body.find("tidal_extender_http_errors_total{path=\"/filter\",reason=\"bad_alloc\"} 1"),
      std::string::npos)
      << m->body;
  server.Stop();
}

// Optional TLS (--tls-cert/--tls-key): the verbs over HTTPS with a certificate a
// client verifies; plain HTTP to that port gets nothing; half a pair is refused.
TEST(ExtenderTls, ServesHttpsWithTheGivenCertificate) {
  tidal::testing::TempDir dir;
  const auto pki = tidal::testing::MakeTestPki(dir);
  FakePrometheus prom(kNodes);
  ASSERT_TRUE(prom.Start());
  Served s(prom);
  ServerOptions so;
  so.port = 0;
  so.tls_cert_file = pki.server_cert_file;
  so.tls_key_file = pki.server_key_file;
  Server tls(*s.ext, s.metrics, s.store, s.clock, so);
  ASSERT_TRUE(tls.Start().ok());
  s.refresher->Start();

  httplib::SSLClient cli("127.0.0.1", tls.port());
  cli.set_ca_cert_path(pki.ca_file.c_str());
  cli.enable_server_certificate_verification(true);
  ASSERT_TRUE(Eventually([&] {
    auto r = cli.Get("/readyz");
    return r && r->status == 200;
  }));
  auto r = cli.Post("/filter", Args(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["Error"], "");

  httplib::Client plain("127.0.0.1", tls.port());
  plain.set_read_timeout(5, 0);
  auto p = plain.Get("/healthz");
  EXPECT_FALSE(p && p->status == 200) << "plain HTTP must not be served on the TLS port";

  struct Case {
    const char* name;
    std::string cert, key, want;
  };
  const Case cases[] = {
      {"cert without key", pki.server_cert_file, "", "go together"},
      {"key without cert", "", pki.server_key_file, "go together"},
      {"unreadable files", dir.path() + "/missing.crt", dir.path() + "/missing.key",
       "cannot load the TLS certificate"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ServerOptions bad;
    bad.port = 0;
    bad.tls_cert_file = tc.cert;
    bad.tls_key_file = tc.key;
    Server b(*s.ext, s.metrics, s.store, s.clock, bad);
    const Status st = b.Start();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.reason().find(tc.want), std::string::npos) << st.reason();
  }
  tls.Stop();
}

}  // namespace
}  // namespace tidal::extender
