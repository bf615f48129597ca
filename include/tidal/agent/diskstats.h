#pragma once
// /proc/diskstats parsing and sysstat's iostat arithmetic (`iostat -x`), plus the
// choice of devices: real block devices, or the devices under given mount points.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"

namespace tidal::agent {

// One line of /proc/diskstats. f[i] is statistics field i + 1 of the kernel's
// iostats.rst; fields a kernel does not print (pre-4.18, pre-5.5) stay 0.
struct DiskCounters {
  unsigned major = 0;
  unsigned minor = 0;
  std::string name;
  int fields = 0;  // how many statistics fields the line had (4, 11, 15 or 17)
  std::array<std::uint64_t, 17> f{};
};

// Parses every well-formed line into `out` (in file order). A malformed line is
// skipped and the first one is reported in the Status, which names the line.
Status ParseDiskstats(std::string_view text, std::vector<DiskCounters>* out);

// Extended statistics of one device over an interval, as iostat -x prints them.
struct IoStats {
  double r_per_s = 0;
  double w_per_s = 0;
  double rkb_per_s = 0;
  double wkb_per_s = 0;
  double r_await_ms = 0;
  double w_await_ms = 0;
  double await_ms = 0;  // reads, writes and discards together
  double aqu_sz = 0;
  double util_pct = 0;  // 0..100
};

// iostat's arithmetic between two samples of the same device taken `interval_ms`
// apart. Cumulative counters that wrapped at 32 bits are unwrapped; a counter that
// went backwards otherwise (device reset or replaced) is an error naming the field.
Status ComputeIoStats(const DiskCounters& prev, const DiskCounters& cur, double interval_ms,
                      IoStats* out);

// The devices watched by default: whole disks, not loop, ram, zram, or partitions;
// device-mapper (dm-*) only when `include_dm`.
bool IsDefaultDevice(std::string_view name, bool include_dm);

// The "major:minor" of the filesystem mounted at or above each path, from a
// mountinfo text (proc(5)): the longest mount point that is a prefix of the path.
Status MountDevices(std::string_view mountinfo, const std::vector<std::string>& paths,
                    std::vector<std::pair<unsigned, unsigned>>* out);

}  // namespace tidal::agent
