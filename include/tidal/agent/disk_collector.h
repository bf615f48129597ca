#pragma once
// Storage IO from /proc/diskstats: await, r_await, w_await, %util and aqu-sz per
// device, with iostat's arithmetic between this pass and the previous one.
#include <map>
#include <string>
#include <vector>

#include "tidal/agent/collector.h"
#include "tidal/agent/diskstats.h"

namespace tidal::agent {

struct DiskOptions {
  std::string procfs = "/proc";     // root of the proc filesystem (a host mount in a pod)
  std::vector<std::string> mounts;  // watch only the devices under these paths
  bool include_dm = false;          // device-mapper devices in the default set
  double await_full_ms = 30;        // ai_storage_io_load = min(1, await / this), design.md#storage
};

class DiskCollector final : public Collector {
 public:
  DiskCollector(DiskOptions options, FileReader read, const MonotonicClock& clock);
  std::string_view Name() const override { return "disk"; }
  Status Collect(MetricSet& out) override;

 private:
  Status SelectDevices(const std::vector<DiskCounters>& all, std::vector<const DiskCounters*>* out);

  DiskOptions options_;
  FileReader read_;
  const MonotonicClock& clock_;
  std::map<std::string, DiskCounters> prev_;  // by device name
  std::int64_t prev_ns_ = 0;
  bool have_prev_ = false;
};

}  // namespace tidal::agent
