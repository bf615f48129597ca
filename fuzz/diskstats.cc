// /proc/diskstats text, then iostat's arithmetic between every device and the
// next one in the file as if they were two samples of one disk: never a crash,
// never a NaN, Inf or negative figure exported.
#include "tidal/agent/diskstats.h"

#include <cmath>

#include "check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<tidal::agent::DiskCounters> disks;
  const tidal::Status st = tidal::agent::ParseDiskstats(tidal::fuzz::AsText(data, size), &disks);
  if (!st.ok()) TIDAL_FUZZ_CHECK(!st.reason().empty(), "a bad line is named");
  for (const auto& d : disks) {
    TIDAL_FUZZ_CHECK(!d.name.empty(), "every device has a name");
    TIDAL_FUZZ_CHECK(d.fields >= 4 && d.fields <= 17, "4 to 17 statistics fields");
    (void)tidal::agent::IsDefaultDevice(d.name, true);
  }
  // The interval comes from the input too, so that odd intervals are covered.
  const double interval_ms = size > 0 ? static_cast<double>(data[0]) * 10.0 : 0.0;
  for (std::size_t i = 0; i + 1 < disks.size(); ++i) {
    tidal::agent::IoStats s;
    const tidal::Status io = tidal::agent::ComputeIoStats(disks[i], disks[i + 1], interval_ms, &s);
    if (!io.ok()) {
      TIDAL_FUZZ_CHECK(!io.reason().empty(), "a reset counter is named");
      continue;
    }
    for (double v : {s.r_per_s, s.w_per_s, s.rkb_per_s, s.wkb_per_s, s.r_await_ms, s.w_await_ms,
                     s.await_ms, s.aqu_sz, s.util_pct})
      TIDAL_FUZZ_CHECK(std::isfinite(v) && v >= 0, "iostat figures are finite and not negative");
    TIDAL_FUZZ_CHECK(s.util_pct <= 100, "%util is at most 100");
  }
  return 0;
}
