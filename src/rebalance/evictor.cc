#include "tidal/rebalance/evictor.h"

#include <fmt/format.h>

#include "tidal/kube/objects.h"

namespace tidal::rebalance {

const char* OutcomeName(EvictionResult::Outcome o) {
  switch (o) {
    case EvictionResult::Outcome::kEvicted:
      return "evicted";
    case EvictionResult::Outcome::kNotNow:
      return "not now (disruption budget)";
    case EvictionResult::Outcome::kGone:
      return "already gone";
    case EvictionResult::Outcome::kRateLimited:
      return "rate-limited";
    case EvictionResult::Outcome::kFailed:
      return "failed";
  }
  return "failed";
}

Evictor::Evictor(kube::Transport& api, const Clock& clock, int max_per_window, TimeMs window_ms)
    : api_(api), clock_(clock), max_per_window_(max_per_window), window_ms_(window_ms) {}

EvictionResult Evictor::Evict(const std::string& ns, const std::string& name) {
  const TimeMs now = clock_.NowMs();
  while (!sent_.empty() && now - sent_.front() >= window_ms_) sent_.pop_front();
  if (static_cast<int>(sent_.size()) >= max_per_window_)
    return {EvictionResult::Outcome::kRateLimited,
            fmt::format("{} evictions in the last {} s already", sent_.size(), window_ms_ / 1000)};
  sent_.push_back(now);
  kube::HttpRequest req;
  req.method = "POST";
  req.path =
      "/api/v1/namespaces/" + kube::UrlEncode(ns) + "/pods/" + kube::UrlEncode(name) + "/eviction";
  req.body = kube::EncodeEviction(ns, name);
  const kube::HttpResponse r = api_.Do(req);
  std::string message;
  if (!r.ok() && !r.body.empty()) {
    kube::ApiStatus st;
    if (kube::DecodeApiStatus(r.body, &st).ok()) message = st.message;
  }
  if (r.ok()) return {EvictionResult::Outcome::kEvicted, fmt::format("HTTP {}", r.status)};
  if (r.status == 429)
    return {EvictionResult::Outcome::kNotNow, fmt::format("HTTP 429: {}", message)};
  if (r.status == 404)
    return {EvictionResult::Outcome::kGone, fmt::format("HTTP 404: {}", message)};
  if (r.status == 0) return {EvictionResult::Outcome::kFailed, "no answer: " + r.error};
  return {EvictionResult::Outcome::kFailed, fmt::format("HTTP {}: {}", r.status, message)};
}

Status ListAll(kube::Transport& api, const std::string& path, int page_size,
               std::vector<std::string>* items) {
  std::vector<std::string> all;
  std::string token;
  const char sep = path.find('?') == std::string::npos ? '?' : '&';
  for (int page = 0; page < 100'000; ++page) {
    kube::HttpRequest req;
    req.path = fmt::format("{}{}limit={}", path, sep, page_size);
    if (!token.empty()) req.path += "&continue=" + kube::UrlEncode(token);
    const kube::HttpResponse r = api.Do(req);
    if (!r.ok()) {
      std::string message = r.error;
      kube::ApiStatus st;
      if (!r.body.empty() && kube::DecodeApiStatus(r.body, &st).ok()) message = st.message;
      return Status::Error(fmt::format("list {}: HTTP {}: {}", path, r.status, message));
    }
    kube::ListPage p;
    if (Status s = kube::DecodeList(r.body, &p); !s.ok())
      return Status::Error("list " + path + ": " + s.reason());
    for (auto& item : p.items) all.push_back(std::move(item));
    token = p.continue_token;
    if (token.empty()) {
      *items = std::move(all);
      return Status::Ok();
    }
  }
  return Status::Error("list " + path + ": too many pages");
}

}  // namespace tidal::rebalance
