#include "extender/fastpath/filter_memo.h"

#include "tidal/core/fast_text.h"

namespace tidal::extender {

bool IsExpectedPrioritize(const FilterMemo& memo, std::string_view body) {
  return !memo.prioritize_body.empty() && TrimJsonSpaceRight(body) == memo.prioritize_body;
}

bool ScoresFromMemo(const FilterMemo& memo, std::string_view pod_json,
                    std::span<const std::string_view> names, std::vector<HostPriority>* out) {
  if (!SameBytes(memo.pod_json, pod_json)) return false;
  out->resize(names.size());
  std::size_t j = 0;
  // Only the survivors are compared: a node the filter rejected is not found.
  for (std::size_t i = 0; i < names.size(); ++i) {
    while (j < memo.names.size() && (!memo.feasible[j] || !SameBytes(memo.names[j], names[i]))) ++j;
    if (j == memo.names.size()) return false;
    (*out)[i] = {names[i], memo.priorities[j]};
    ++j;
  }
  return true;
}

}  // namespace tidal::extender
