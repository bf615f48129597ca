#include "tidal/core/clock.h"

#include <chrono>

namespace tidal {

TimeMs SystemClock::NowMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace tidal
