#pragma once
// List and watch of one resource (Nodes, Pods), as client-go's reflector does:
// list in pages (limit/continue), then watch from the list's resourceVersion
// with bookmarks; a watch that ends is resumed from the last resourceVersion
// seen; 410 Gone (on the watch request or as an ERROR event) means the version
// is too old and the resource is listed again; other failures back off
// (doubling up to a maximum) and retry. The handler sees the whole list, then
// every event, on the informer's thread.
#include <spdlog/logger.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/kube/client.h"
#include "tidal/kube/objects.h"

namespace tidal::kube {

class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  // The resource's whole state, replacing what was known (after a (re)list).
  virtual void Replace(const std::vector<std::string>& objects) = 0;
  // One ADDED, MODIFIED or DELETED event.
  virtual void Apply(const WatchEvent& event) = 0;
};

struct InformerOptions {
  int page_size = 500;
  // The server ends each watch after this and it is resumed; below the client's
  // stream read timeout, so that a quiet watch is ended by the server.
  int watch_timeout_s = 90;
  // A watch that ends sooner than this without any event is a failure (backed
  // off); a longer one was quiet, and is resumed at once.
  TimeMs quiet_watch_ms = 1'000;
  const Clock* clock = nullptr;  // default: the system clock
  TimeMs backoff_initial_ms = 200;
  TimeMs backoff_max_ms = 30'000;
  std::string field_selector;  // e.g. "spec.nodeName!=" ; empty: none
};

struct InformerStats {
  std::uint64_t lists = 0, watches = 0, events = 0, bookmarks = 0, gone = 0, failures = 0;
  std::string resource_version, last_error;
  bool synced = false;  // a first list has been handed to the handler
};

class Informer {
 public:
  // `resource`: the collection path, e.g. "/api/v1/nodes".
  Informer(Transport& api, std::string resource, InformerHandler& handler,
           std::shared_ptr<spdlog::logger> log, InformerOptions options = {});
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();  // runs on its own thread until Stop()
  void Stop();
  bool synced() const { return synced_.load(); }
  InformerStats stats() const;

 private:
  enum class WatchEnd { kResume, kRelist, kFailed, kStopped };
  bool List();  // false: failed (stats say why) or stopped
  WatchEnd Watch();
  bool ApplyWatchLine(std::string_view line, WatchEnd* end, std::uint64_t* received);
  bool Sleep(TimeMs ms);  // false: stopped
  void Fail(const std::string& error);
  std::string Path(const std::string& query) const;

  Transport& api_;
  std::string resource_;
  InformerHandler& handler_;
  std::shared_ptr<spdlog::logger> log_;
  InformerOptions options_;
  std::atomic<bool> synced_{false};
  mutable std::mutex mu_;  // guards stats_, stop_
  std::condition_variable cv_;
  bool stop_ = false;
  InformerStats stats_;
  std::string resource_version_;  // informer thread only
  SystemClock system_clock_;
  const Clock& clock_;
  std::thread thread_;
};

}  // namespace tidal::kube
