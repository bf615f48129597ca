#pragma once
// A deterministic discrete-event engine: events run in order of time, then of
// insertion (never of address), so the same inputs give the same run.
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "tidal/core/clock.h"

namespace tidal::sim {

class Engine {
 public:
  using Action = std::function<void()>;

  TimeMs now() const { return now_; }
  // Runs `action` at `at` (never before now).
  void At(TimeMs at, Action action);
  void After(TimeMs delay, Action action) { At(now_ + delay, std::move(action)); }
  // Runs events until none is left, `stop` is called, or time would pass `until`.
  void Run(TimeMs until);
  void Stop() { stopped_ = true; }
  std::uint64_t events_run() const { return events_run_; }
  bool empty() const { return queue_.empty(); }

  // The engine's clock, for code that takes a Clock (the policies).
  const Clock& clock() const { return clock_; }

 private:
  struct Event {
    TimeMs at;
    std::uint64_t seq;
    std::size_t slot;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  class EngineClock final : public Clock {
   public:
    explicit EngineClock(const TimeMs* now) : now_(now) {}
    TimeMs NowMs() const override { return *now_; }

   private:
    const TimeMs* now_;
  };

  TimeMs now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t events_run_ = 0;
  bool stopped_ = false;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::vector<Action> actions_;
  std::vector<std::size_t> free_slots_;
  EngineClock clock_{&now_};
};

// A seeded random source with distributions of our own, so a seed gives the same
// numbers on every standard library.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed ? seed : 0x9e3779b97f4a7c15ULL) {}
  std::uint64_t Next();                 // splitmix64
  double Uniform();                     // [0, 1)
  double Uniform(double lo, double hi)  // [lo, hi)
  {
    return lo + (hi - lo) * Uniform();
  }
  double Exponential(double mean);
  std::uint64_t Below(std::uint64_t n);  // [0, n)

 private:
  std::uint64_t state_;
};

}  // namespace tidal::sim
