#pragma once
// Acting on a plan: the Eviction API (policy/v1), so the API server checks
// every PodDisruptionBudget again at the moment of the eviction, and a token
// bucket on the injected clock so that no loop evicts faster than allowed.
// Also paged lists of the objects the planner reads.
#include <deque>
#include <string>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/kube/client.h"

namespace tidal::rebalance {

struct EvictionResult {
  enum class Outcome {
    kEvicted,      // 200/201: the pod is going
    kNotNow,       // 429: a disruption budget forbids it now; try in a later interval
    kGone,         // 404: the pod is already gone
    kRateLimited,  // not sent: the rate limit is used up
    kFailed,       // any other answer or no answer
  };
  Outcome outcome = Outcome::kFailed;
  std::string detail;
};
const char* OutcomeName(EvictionResult::Outcome o);

class Evictor {
 public:
  // At most `max_per_window` evictions sent in any `window_ms`.
  Evictor(kube::Transport& api, const Clock& clock, int max_per_window, TimeMs window_ms);
  EvictionResult Evict(const std::string& ns, const std::string& name);

 private:
  kube::Transport& api_;
  const Clock& clock_;
  int max_per_window_;
  TimeMs window_ms_;
  std::deque<TimeMs> sent_;
};

// Every item of a collection (e.g. "/api/v1/pods"), in pages of `page_size`; the
// query part (fieldSelector) may be in `path`. Items are JSON texts.
Status ListAll(kube::Transport& api, const std::string& path, int page_size,
               std::vector<std::string>* items);

}  // namespace tidal::rebalance
