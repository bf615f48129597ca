#pragma once
// The agent core: runs the collectors on their own thread every interval and
// publishes an immutable exposition that scrapes read without touching hardware.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tidal/agent/collector.h"
#include "tidal/core/exposition.h"

namespace tidal::agent {

// One finished collection pass, ready to serve.
struct Exposition {
  std::string text;           // text format 0.0.4
  std::int64_t taken_ns = 0;  // MonotonicClock time at the end of the pass
  std::uint64_t pass = 0;     // 1 for the first pass
  bool all_up = false;        // every collector reported OK
};

struct AgentOptions {
  std::string node;                   // value of the `node` label on every series
  std::int64_t interval_ms = 10'000;  // between the starts of two passes
  BuildInfo build{};                  // exported as tidal_build_info unless its version is empty
  // Where the agent says what it repaired (a label value that was not UTF-8):
  // once per distinct label, for the first kMaxRepairsLogged. None: not said.
  std::function<void(const std::string&)> warn{};
};

class Agent {
 public:
  // Throws std::invalid_argument for a bad interval or a missing node name.
  Agent(AgentOptions options, std::vector<std::unique_ptr<Collector>> collectors,
        const MonotonicClock& clock);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs every collector once and publishes the result; also used by --once.
  // Safe to call while the collection thread runs: passes are serialised.
  void CollectOnce();
  // Collects now, then every interval, on a thread of its own, until Stop().
  void Start();
  void Stop();

  // The latest pass; null before the first one finished.
  std::shared_ptr<const Exposition> Latest() const;
  // Healthy once a pass has finished within the last three intervals.
  bool Healthy() const;
  const AgentOptions& options() const { return options_; }

 private:
  void Loop();
  // Says once per label (SerializeText's list) that its value was repaired.
  void NoteRepairs(const std::vector<std::string>& repaired);

  AgentOptions options_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  const MonotonicClock& clock_;
  std::mutex collect_mu_;  // held for a whole pass; guards collectors_ use and passes_
  std::uint64_t passes_ = 0;
  // Labels whose repair was logged (guarded by collect_mu_), bounded: a name
  // that changes every pass must not grow the agent or flood its log.
  static constexpr std::size_t kMaxRepairsLogged = 32;
  std::set<std::string> repairs_logged_;

  mutable std::mutex mu_;  // guards latest_ and stop_
  std::shared_ptr<const Exposition> latest_;
  bool stop_ = false;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace tidal::agent
