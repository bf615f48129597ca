// Prometheus query-API bodies (what a proxy or a broken server may send), then
// the snapshot built from whatever parsed: never a crash, never a usable node
// built from a non-finite value.
#include <cmath>

#include "check.h"
#include "tidal/metrics/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = tidal::fuzz::AsText(data, size);
  tidal::prom::QueryResult r;
  const tidal::Status st = tidal::prom::ParseQueryResponse(body, 200, &r);
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(r.series.empty(), "nothing half-parsed is returned");
    TIDAL_FUZZ_CHECK(!st.reason().empty(), "an error says what is wrong");
    return 0;
  }
  const tidal::MetricsSnapshot s = tidal::BuildSnapshot(r, r, "node", 0);
  for (const auto& [name, m] : s.nodes) {
    if (!m.usable) continue;
    TIDAL_FUZZ_CHECK(!m.gpus.empty(), "a usable node has GPUs");
    for (const auto& g : m.gpus) {
      TIDAL_FUZZ_CHECK(g.memory_total >= 0 && g.memory_used >= 0, "memory is never negative");
      TIDAL_FUZZ_CHECK(std::isfinite(g.nvlink_utilization), "utilisation is finite");
    }
    TIDAL_FUZZ_CHECK(std::isfinite(m.storage_await_ms), "await is finite");
  }
  return 0;
}
