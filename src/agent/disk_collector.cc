#include "tidal/agent/disk_collector.h"

#include <algorithm>
#include <set>

namespace tidal::agent {

DiskCollector::DiskCollector(DiskOptions options, FileReader read, const MonotonicClock& clock)
    : options_(std::move(options)), read_(std::move(read)), clock_(clock) {}

Status DiskCollector::SelectDevices(const std::vector<DiskCounters>& all,
                                    std::vector<const DiskCounters*>* out) {
  out->clear();
  if (options_.mounts.empty()) {
    for (const DiskCounters& d : all)
      if (IsDefaultDevice(d.name, options_.include_dm)) out->push_back(&d);
    return Status();
  }
  // The host's mount table (pid 1) when the host's /proc is mounted; our own otherwise.
  std::string text;
  Status st = read_(options_.procfs + "/1/mountinfo", &text);
  if (!st.ok()) st = read_(options_.procfs + "/self/mountinfo", &text);
  if (!st.ok()) return st;
  std::vector<std::pair<unsigned, unsigned>> ids;
  st = MountDevices(text, options_.mounts, &ids);
  for (const auto& id : ids) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const DiskCounters& d) {
      return d.major == id.first && d.minor == id.second;
    });
    if (it != all.end()) {
      out->push_back(&*it);
    } else if (st.ok()) {
      st = Status::Error("device " + std::to_string(id.first) + ":" + std::to_string(id.second) +
                         " of a --mount path is not in diskstats (network or virtual filesystem?)");
    }
  }
  return st;
}

Status DiskCollector::Collect(MetricSet& out) {
  // Seconds, Prometheus's base unit, like the read/write awaits: promtool rejects a
  // name with an abbreviated unit. The rules record ai_storage_await_ms from it.
  out.Declare("ai_storage_await_seconds",
              "Average IO request time in seconds over the collection interval: iostat's combined "
              "await (reads, writes and discards) / 1000.");
  out.Declare("ai_storage_read_await_seconds",
              "Average read request time in seconds (iostat r_await / 1000).");
  out.Declare("ai_storage_write_await_seconds",
              "Average write request time in seconds (iostat w_await / 1000).");
  out.Declare("ai_storage_util_ratio",
              "Fraction of the interval the device was busy, 0-1 (iostat %util / 100).");
  out.Declare("ai_storage_queue_size", "Average number of queued requests (iostat aqu-sz).");
  out.Declare("ai_storage_io_load",
              "Node IO load: min(1, worst device await / 30 ms), the scheduler's IO dimension.");

  std::string text;
  Status st = read_(options_.procfs + "/diskstats", &text);
  if (!st.ok()) return st;
  const std::int64_t now = clock_.NowNs();
  std::vector<DiskCounters> all;
  Status problem = ParseDiskstats(text, &all);
  // Every Linux host lists at least one block device: an empty file is a wrong
  // --procfs (or a stand-in), not an idle node.
  if (all.empty() && problem.ok())
    problem = Status::Error(options_.procfs + "/diskstats: no block devices, expected a line each");
  std::vector<const DiskCounters*> chosen;
  if (Status sel = SelectDevices(all, &chosen); !sel.ok() && problem.ok()) problem = sel;

  const double interval_ms = static_cast<double>(now - prev_ns_) / 1e6;
  std::map<std::string, DiskCounters> next;
  double worst_await = -1;
  for (const DiskCounters* d : chosen) {
    next[d->name] = *d;
    if (!have_prev_) continue;
    const auto it = prev_.find(d->name);
    if (it == prev_.end()) continue;  // appeared since the last pass: rates from the next one
    IoStats s;
    if (Status cs = ComputeIoStats(it->second, *d, interval_ms, &s); !cs.ok()) {
      if (problem.ok()) problem = cs;
      continue;
    }
    const LabelPairs dev{{"device", d->name}};
    out.Add("ai_storage_await_seconds", dev, s.await_ms / 1000);
    out.Add("ai_storage_read_await_seconds", dev, s.r_await_ms / 1000);
    out.Add("ai_storage_write_await_seconds", dev, s.w_await_ms / 1000);
    out.Add("ai_storage_util_ratio", dev, s.util_pct / 100);
    out.Add("ai_storage_queue_size", dev, s.aqu_sz);
    worst_await = std::max(worst_await, s.await_ms);
  }
  if (have_prev_) {
    for (const auto& [name, counters] : prev_) {
      if (next.count(name) == 0 && problem.ok())
        problem = Status::Error(name + ": device vanished since the last sample");
    }
  }
  if (worst_await >= 0)
    out.Add("ai_storage_io_load", {}, std::min(1.0, worst_await / options_.await_full_ms));
  prev_ = std::move(next);
  prev_ns_ = now;
  have_prev_ = true;
  return problem;
}

}  // namespace tidal::agent
