#pragma once
// What a filter leaves for the prioritize kube-scheduler sends next for the same
// pod: the verdicts and scores of every candidate, and that prioritize request
// to the byte. Its oracle: the same prioritize to an extender that saw no filter
// (fastpath/README.md).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/text.h"
#include "tidal/extender/wire.h"

namespace tidal::extender {

struct FilterMemo {
  std::string pod_json;  // the Pod as sent: the same bytes are the same demand
  std::string pod_key;   // for the log
  int survivors = 0;
  std::uint64_t generation = 0;  // of the view decided on
  int stage = 0;
  StringList names;  // every candidate, in request order
  // NodeNames mode: the prioritize request kube-scheduler sends after this filter,
  // byte for byte (Go's encoding: this Pod, no Nodes, the NodeNames answered).
  std::string prioritize_body;
  std::vector<char> feasible;
  std::vector<std::int64_t> priorities;  // the runner's scores mapped to 0..10
};

// Whether `body` is the prioritize request the memo's filter leads to, to the
// byte (trailing whitespace aside): then it needs no decoding, its answer is the
// survivors' scores (EncodeHostPriorities of names, feasible, priorities).
bool IsExpectedPrioritize(const FilterMemo& memo, std::string_view body);

// The memo's scores for a decoded prioritize: the same Pod bytes, and `names`
// among the filter's survivors in its order (kube-scheduler sends them so). False
// when not: the request is evaluated again.
bool ScoresFromMemo(const FilterMemo& memo, std::string_view pod_json,
                    std::span<const std::string_view> names, std::vector<HostPriority>* out);

}  // namespace tidal::extender
