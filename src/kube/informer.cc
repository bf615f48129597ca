#include "tidal/kube/informer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace tidal::kube {

Informer::Informer(Transport& api, std::string resource, InformerHandler& handler,
                   std::shared_ptr<spdlog::logger> log, InformerOptions options)
    : api_(api),
      resource_(std::move(resource)),
      handler_(handler),
      log_(std::move(log)),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : system_clock_) {}

Informer::~Informer() { Stop(); }

std::string Informer::Path(const std::string& query) const {
  std::string p = resource_ + "?" + query;
  if (!options_.field_selector.empty()) p += "&fieldSelector=" + UrlEncode(options_.field_selector);
  return p;
}

InformerStats Informer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool Informer::Sleep(TimeMs ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_; });
}

void Informer::Fail(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.failures;
  if (stats_.last_error != error) log_->warn("{}: {}", resource_, error);
  stats_.last_error = error;
}

bool Informer::List() {
  std::vector<std::string> all;
  std::string cont, rv;
  for (;;) {
    std::string q = "limit=" + std::to_string(options_.page_size);
    if (!cont.empty()) q += "&continue=" + UrlEncode(cont);
    const HttpResponse r = api_.Do(HttpRequest{"GET", Path(q), "", ""});
    if (!r.ok()) {
      ApiStatus st;
      const bool expired = r.status == 410 && !cont.empty();
      Fail("list: " + (r.status == 0 ? r.error
                                     : "HTTP " + std::to_string(r.status) +
                                           (DecodeApiStatus(r.body, &st).ok() && !st.message.empty()
                                                ? ": " + st.message
                                                : "")));
      if (expired) {  // the continue token expired: list again from the start
        all.clear();
        cont.clear();
        continue;
      }
      return false;
    }
    ListPage page;
    if (Status s = DecodeList(r.body, &page); !s.ok()) {
      Fail("list: " + s.reason());
      return false;
    }
    for (auto& item : page.items) all.push_back(std::move(item));
    rv = page.resource_version;
    cont = page.continue_token;
    if (cont.empty()) break;
  }
  handler_.Replace(all);
  resource_version_ = rv;
  synced_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.lists;
  stats_.synced = true;
  stats_.resource_version = rv;
  stats_.last_error.clear();
  return true;
}

// One line of a watch stream, its event applied; false when the stream must
// stop, `*end` saying how the watch ends.
bool Informer::ApplyWatchLine(std::string_view line, WatchEnd* end, std::uint64_t* received) {
  if (line.empty()) return true;
  ++*received;
  WatchEvent ev;
  if (Status s = DecodeWatchEvent(line, &ev); !s.ok()) {
    // Something was lost: only a fresh list is certain.
    Fail("watch: " + s.reason());
    *end = WatchEnd::kRelist;
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  switch (ev.type) {
    case WatchEvent::Type::kBookmark:
      ++stats_.bookmarks;
      break;
    case WatchEvent::Type::kError: {
      ApiStatus st;
      const bool ok = DecodeApiStatus(ev.object, &st).ok();
      if (ok && (st.code == 410 || st.reason == "Expired" || st.reason == "Gone")) {
        ++stats_.gone;
        *end = WatchEnd::kRelist;
      } else {
        ++stats_.failures;
        stats_.last_error = "watch ERROR event: " + (ok ? st.message : ev.object.substr(0, 200));
        *end = WatchEnd::kFailed;
      }
      return false;
    }
    default:
      ++stats_.events;
      break;
  }
  if (!ev.resource_version.empty()) {
    resource_version_ = ev.resource_version;
    stats_.resource_version = ev.resource_version;
  }
  if (ev.type != WatchEvent::Type::kBookmark) {
    mu_.unlock();
    handler_.Apply(ev);
    mu_.lock();
  }
  return true;
}

Informer::WatchEnd Informer::Watch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
    if (stop_) return WatchEnd::kStopped;
  }
  const TimeMs started = clock_.NowMs();
  std::string pending;  // a line split across chunks
  WatchEnd end = WatchEnd::kResume;
  std::uint64_t received = 0;
  bool stop_stream = false;
  const auto on_line = [&](std::string_view line) {
    if (!ApplyWatchLine(line, &end, &received)) stop_stream = true;
  };
  const std::string path =
      Path("watch=1&allowWatchBookmarks=true&resourceVersion=" + UrlEncode(resource_version_) +
           "&timeoutSeconds=" + std::to_string(options_.watch_timeout_s));
  const HttpResponse r = api_.Stream(path, [&](std::string_view data) {
    pending.append(data);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line(std::string_view(pending).substr(start, nl - start));
      if (stop_stream) return false;
    }
    pending.erase(0, start);
    if (pending.size() > (64u << 20)) {  // no object is this large: a broken stream
      Fail("watch: a line longer than 64 MiB");
      end = WatchEnd::kRelist;
      return false;
    }
    return true;
  });
  if (stop_stream || end == WatchEnd::kRelist) return end;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return WatchEnd::kStopped;
  }
  if (r.status == 410) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.gone;
    return WatchEnd::kRelist;
  }
  if (r.status == 0 || !r.ok()) {
    Fail("watch: " + (r.status == 0 ? r.error : "HTTP " + std::to_string(r.status)));
    return WatchEnd::kFailed;
  }
  if (!pending.empty()) on_line(pending);  // a last line without its newline
  if (end == WatchEnd::kResume && received == 0) {
    // A quiet watch (no change for timeoutSeconds, or until the read timeout) is
    // normal: resume at once, or changes arrive late. One that ends at once must
    // not be retried in a tight loop.
    const TimeMs lasted = clock_.NowMs() - started;
    if (lasted < options_.quiet_watch_ms) {
      Fail("watch: ended at once (" + std::to_string(lasted) + " ms) without any event");
      return WatchEnd::kFailed;
    }
    log_->debug("{}: quiet watch ended after {} ms, resuming", resource_, lasted);
  }
  return end;
}

void Informer::Start() {
  thread_ = std::thread([this] {
    TimeMs backoff = options_.backoff_initial_ms;
    bool listed = false;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
      }
      if (!listed) {
        listed = List();
        if (!listed) {
          if (!Sleep(backoff)) return;
          backoff = std::min(backoff * 2, options_.backoff_max_ms);
          continue;
        }
        backoff = options_.backoff_initial_ms;
      }
      switch (Watch()) {
        case WatchEnd::kStopped:
          return;
        case WatchEnd::kResume:  // the server's timeout: resume from the last version
          backoff = options_.backoff_initial_ms;
          break;
        case WatchEnd::kRelist:
          log_->info("{}: resourceVersion {} is gone, listing again", resource_, resource_version_);
          listed = false;
          break;
        case WatchEnd::kFailed:
          if (!Sleep(backoff)) return;
          backoff = std::min(backoff * 2, options_.backoff_max_ms);
          break;
      }
    }
  });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  api_.CancelStreams();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tidal::kube
