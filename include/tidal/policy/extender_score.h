#pragma once
// The one place where Tidal's 0–100 score becomes the extender protocol's 0–10.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tidal {

inline constexpr std::int64_t kMaxExtenderPriority = 10;

// Rounds half up (73.3 → 7, 75 → 8); NaN and out-of-range scores are clamped, so
// the answer is always inside the protocol's range. Equal inputs give equal
// outputs, so ties keep the order kube-scheduler gave.
inline std::int64_t ToExtenderPriority(double score) {
  if (!(score >= 0)) return 0;
  if (score >= 95) return kMaxExtenderPriority;
  // score / 10 + 0.5 is in [0.5, 10) here: truncation is the floor, without a call.
  return static_cast<std::int64_t>(score / 10.0 + 0.5);
}

}  // namespace tidal
