#pragma once
// Clocks are injected so that tests and the simulator control time.
#include <cstdint>

namespace tidal {

// Milliseconds since the Unix epoch (wall clock) or since the start of a simulation.
using TimeMs = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMs NowMs() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimeMs NowMs() const override;
};

// A clock that moves only when told to: for tests and the simulator.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeMs start = 0) : now_(start) {}
  TimeMs NowMs() const override { return now_; }
  void Set(TimeMs t) { now_ = t; }
  void Advance(TimeMs dt) { now_ += dt; }

 private:
  TimeMs now_;
};

}  // namespace tidal
