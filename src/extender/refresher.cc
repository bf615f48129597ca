#include "tidal/extender/refresher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "tidal/core/thread_priority.h"

namespace tidal::extender {

namespace {
constexpr int kRefresherNiceIncrement = 10;
}  // namespace

Refresher::Refresher(MetricsSource& source, ViewStore& store, NodeCatalog& catalog,
                     const Clock& clock, TimeMs interval_ms, std::shared_ptr<spdlog::logger> log)
    : source_(source),
      store_(store),
      catalog_(catalog),
      clock_(clock),
      interval_ms_(interval_ms),
      log_(std::move(log)) {}

Refresher::~Refresher() { Stop(); }

void Refresher::RefreshOnce() {
  std::lock_guard<std::mutex> serial(build_mu_);
  const TimeMs started = clock_.NowMs();
  auto snapshot = std::make_shared<MetricsSnapshot>();
  // No publish lock during the fetch: a bind must not wait on Prometheus.
  const Status s = source_.Fetch(started, snapshot.get());
  const TimeMs now = clock_.NowMs();

  // Only the builders change the health and the nodes, and they are serialised:
  // the current view's are the latest (binds publish reservations only).
  const auto previous = store_.Load();
  auto next = std::make_shared<ClusterView>(*previous);
  SourceHealth& h = next->health;
  ++h.attempts;
  h.last_attempt_ms = now;
  h.last_fetch_duration_ms = now - started;
  if (s.ok()) {
    LogFetched(*snapshot, previous->snapshot.get(), &h);
    h.last_success_ms = now;
    h.failing_since_ms = 0;
    h.last_error.clear();
    UseSnapshot(std::move(snapshot), now, next.get());
  } else {
    ++h.failures;
    if (h.failing_since_ms == 0) {
      h.failing_since_ms = started;
      log_->warn("metrics source {} failed: {}", source_.Describe(), s.reason());
    }
    h.last_error = s.reason();
    // The last snapshot goes on, with what the API server changed since.
    std::uint64_t catalog_gen = catalog_.generation();
    if (catalog_gen != next->catalog_generation) RebuildNodes(now, next.get());
  }
  PublishNodes(std::move(next));
}

// What a successful fetch says once, not on every fetch: the source back, nodes
// with series appearing or going, the source turning slow or fast, the number of
// unusable readings changing.
void Refresher::LogFetched(const MetricsSnapshot& snapshot, const MetricsSnapshot* before,
                           SourceHealth* h) {
  const std::size_t nodes_before = before ? before->nodes.size() : 0;
  if (h->failing_since_ms != 0 || h->last_success_ms == 0) {
    log_->info("metrics source {}: ok, {} nodes, {} series", source_.Describe(),
               snapshot.nodes.size(), snapshot.series);
  } else if (snapshot.nodes.size() != nodes_before) {
    // Series of nodes appearing or going (a new agent, or series for nodes the
    // scheduler does not know: /debug/nodes lists them).
    log_->info("metrics: {} nodes with series (was {})", snapshot.nodes.size(), nodes_before);
  }
  for (const auto& p : snapshot.problems) log_->warn("metrics: {}", p);
  const bool slow = slow_after_ms_ > 0 && h->last_fetch_duration_ms > slow_after_ms_;
  if (slow && !h->slow)
    log_->warn("metrics source {} is slow: the fetch took {} ms (warning above {} ms)",
               source_.Describe(), h->last_fetch_duration_ms, slow_after_ms_);
  if (!slow && h->slow)
    log_->info("metrics source {}: fast again ({} ms)", source_.Describe(),
               h->last_fetch_duration_ms);
  h->slow = slow;
  // Doubtful readings (NaN, ±Inf, disagreeing duplicates...) make nodes unknown; say
  // so when their number changes, with the first few reasons.
  std::size_t unusable = 0;
  std::string examples;
  for (const auto& [name, m] : snapshot.nodes) {
    if (m.usable) continue;
    if (++unusable <= 3)
      examples += (examples.empty() ? "" : "; ") + name + ": " +
                  (m.problems.empty() ? std::string("unusable") : m.problems.front());
  }
  if (unusable != h->unusable_nodes) {
    if (unusable > 0) {
      log_->warn("metrics: {} nodes have unusable readings and are unknown ({}{})", unusable,
                 examples, unusable > 3 ? "; …" : "");
    } else {
      log_->info("metrics: every node's reading is usable again");
    }
  }
  h->unusable_nodes = unusable;
}

// A new snapshot: reservations it shows expire, peaks and the forecast learn
// from it, and the view's nodes are built from it.
void Refresher::UseSnapshot(std::shared_ptr<MetricsSnapshot> snapshot, TimeMs now,
                            ClusterView* next) {
  if (inflight_) inflight_->Expire(now, *snapshot);
  if (peaks_) peaks_->Sample(*snapshot);
  if (learner_ && !learned_file_.empty() && learner_->dirty()) {
    if (const Status saved = SaveLearnedMemory(learned_file_, learner_); !saved.ok())
      log_->warn("memory learning: {}", saved.reason());
  }
  next->snapshot = std::move(snapshot);
  RebuildNodes(now, next, /*observe=*/true);
}

void Refresher::RebuildNodes(TimeMs now, ClusterView* next, bool observe) {
  std::uint64_t catalog_gen = 0;
  auto nodes = std::make_shared<std::unordered_map<std::string, NodeState>>();
  BuildNodes(next->snapshot.get(), catalog_.Copy(&catalog_gen), nodes.get());
  if (observe && forecaster_)
    for (const auto& [name, node] : *nodes)
      if (node.metrics_known) forecaster_->Observe(name, node.sample_time_ms, node.load);
  ApplyForecast(nodes.get(), now);
  if (nodes_built_) nodes_built_(*nodes);
  next->nodes = std::move(nodes);
  next->catalog_generation = catalog_gen;
}

void Refresher::PublishNodes(std::shared_ptr<ClusterView> next) {
  if (inflight_) {
    InFlight::Overlaid o = inflight_->Overlay(next->nodes, next->catalog_generation);
    next->reserved = std::move(o.reserved);
    next->recent = std::move(o.recent);
    next->reservations_generation = o.generation;
  }
  std::lock_guard<std::mutex> publish(publish_mu_);
  next->generation = ++generation_;
  CatchUpReservations(next.get());
  store_.Publish(std::move(next));
}

void Refresher::CatchUpReservations(ClusterView* next) {
  if (!inflight_ || inflight_->generation() == next->reservations_generation) return;
  const InFlight::Overlaid previous{next->reserved, next->recent, next->reservations_generation};
  InFlight::Overlaid o = inflight_->Overlay(next->nodes, next->catalog_generation, &previous);
  next->reserved = std::move(o.reserved);
  next->recent = std::move(o.recent);
  next->reservations_generation = o.generation;
}

// Each known node's expected change by now + horizon; the reservations overlay
// is added on top of `load`, so it still counts.
void Refresher::ApplyForecast(std::unordered_map<std::string, NodeState>* nodes, TimeMs now) {
  if (!forecaster_) return;
  for (auto& [name, node] : *nodes) {
    if (!node.metrics_known) continue;
    const auto f = forecaster_->Predict(name, now);
    if (!f) continue;
    node.load_trend = {f->gpu_memory - node.load.gpu_memory, f->nvlink - node.load.nvlink,
                       f->await_ms - node.load.await_ms};
    node.has_load_trend = true;
  }
}

void Refresher::Republish() {
  std::lock_guard<std::mutex> serial(build_mu_);
  if (inflight_) inflight_->Expire(clock_.NowMs(), MetricsSnapshot{});  // the TTL alone
  const auto previous = store_.Load();
  if (catalog_.generation() == previous->catalog_generation) {
    PublishReservations();
    return;
  }
  auto next = std::make_shared<ClusterView>(*previous);
  auto nodes = std::make_shared<std::unordered_map<std::string, NodeState>>();
  std::uint64_t catalog_gen = 0;
  BuildNodes(previous->snapshot.get(), catalog_.Copy(&catalog_gen), nodes.get());
  ApplyForecast(nodes.get(), clock_.NowMs());
  if (nodes_built_) nodes_built_(*nodes);
  next->nodes = std::move(nodes);
  next->catalog_generation = catalog_gen;
  PublishNodes(std::move(next));
}

void Refresher::PublishReservations() {
  if (!inflight_) return;
  std::lock_guard<std::mutex> publish(publish_mu_);
  const auto current = store_.Load();
  if (inflight_->generation() == current->reservations_generation) return;
  auto next = std::make_shared<ClusterView>(*current);
  next->generation = ++generation_;
  CatchUpReservations(next.get());
  store_.Publish(std::move(next));
}

void Refresher::Start() {
  thread_ = std::thread([this] {
    // Requests preempt the fetch and the snapshot build (tens of ms per 1 000 nodes)
    // instead of queueing behind them on a busy core; idle CPU still goes to it.
    if (const std::string e = LowerThisThreadsPriority(kRefresherNiceIncrement); !e.empty())
      log_->warn("metrics refresher: {}", e);
    // Fetch every interval; in between, publish catalog and reservation changes
    // (from the API watch, and expiry) within half a second.
    const TimeMs tick = std::min<TimeMs>(interval_ms_, 500);
    TimeMs next_fetch = 0;
    for (;;) {
      if (clock_.NowMs() >= next_fetch) {
        RefreshOnce();
        next_fetch = clock_.NowMs() + interval_ms_;
      } else {
        Republish();
      }
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(tick), [this] { return stop_; })) return;
    }
  });
}

void Refresher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tidal::extender
