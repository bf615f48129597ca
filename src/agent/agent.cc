#include "tidal/agent/agent.h"

#include <chrono>
#include <stdexcept>

namespace tidal::agent {

Agent::Agent(AgentOptions options, std::vector<std::unique_ptr<Collector>> collectors,
             const MonotonicClock& clock)
    : options_(std::move(options)), collectors_(std::move(collectors)), clock_(clock) {
  if (options_.interval_ms <= 0) throw std::invalid_argument("agent: interval must be positive");
  if (options_.node.empty()) throw std::invalid_argument("agent: the node name is empty");
}

Agent::~Agent() { Stop(); }

void Agent::CollectOnce() {
  // One pass at a time: collectors keep state between passes (previous samples).
  std::lock_guard pass_lock(collect_mu_);
  MetricSet set(options_.node);
  set.Declare("ai_collector_up",
              "1 if the collector's last pass succeeded, 0 if not; `reason` says why it is down.");
  set.Declare("ai_collector_duration_seconds", "Wall time the collector's last pass took.");
  struct Result {
    std::string name;
    Status status;
    double seconds;
  };
  std::vector<Result> results;
  results.reserve(collectors_.size());
  for (const auto& c : collectors_) {
    const std::int64_t t0 = clock_.NowNs();
    Status st = c->Collect(set);
    const std::int64_t t1 = clock_.NowNs();
    results.push_back({std::string(c->Name()), std::move(st), static_cast<double>(t1 - t0) / 1e9});
  }
  bool all_up = true;
  for (const Result& r : results) {
    all_up = all_up && r.status.ok();
    set.Add("ai_collector_up", {{"collector", r.name}, {"reason", r.status.reason()}},
            r.status.ok() ? 1 : 0);
  }
  for (const Result& r : results)
    set.Add("ai_collector_duration_seconds", {{"collector", r.name}}, r.seconds);
  auto e = std::make_shared<Exposition>();
  std::vector<std::string> repaired;
  e->text = SerializeText(set.families(), &repaired);
  NoteRepairs(repaired);
  if (!options_.build.version.empty()) AppendBuildInfo(options_.build, &e->text);
  e->taken_ns = clock_.NowNs();
  e->pass = ++passes_;
  e->all_up = all_up;
  std::lock_guard lock(mu_);
  latest_ = std::move(e);
}

void Agent::NoteRepairs(const std::vector<std::string>& repaired) {
  if (!options_.warn) return;
  for (const std::string& label : repaired) {
    if (repairs_logged_.size() > kMaxRepairsLogged || repairs_logged_.count(label)) continue;
    repairs_logged_.insert(label);
    if (repairs_logged_.size() > kMaxRepairsLogged) {
      options_.warn("more label values are not UTF-8; further repairs are not logged");
      continue;
    }
    options_.warn("label value not UTF-8, each invalid sequence written as U+FFFD: " + label);
  }
}

std::shared_ptr<const Exposition> Agent::Latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

bool Agent::Healthy() const {
  const auto e = Latest();
  if (!e) return false;
  return clock_.NowNs() - e->taken_ns <= 3 * options_.interval_ms * 1'000'000;
}

void Agent::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Agent::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Agent::Loop() {
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    CollectOnce();
    next += std::chrono::milliseconds(options_.interval_ms);
    // A pass that overran the interval does not cause a burst of catch-up passes.
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    std::unique_lock lock(mu_);
    if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

}  // namespace tidal::agent
