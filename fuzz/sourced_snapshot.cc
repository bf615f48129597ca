// Prometheus query-API bodies read as dcgm-exporter's, node-exporter's and the
// agent's series per MetricsSourceConfig (the first byte picks the mix): never a
// crash, and a usable node is a whole, finite, plausible reading.
#include <cmath>

#include "check.h"
#include "tidal/metrics/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using K = tidal::MetricsSourceKind;
  tidal::MetricsSourceConfig c;
  const std::uint8_t pick = data[0];
  c.gpu_memory = pick & 1 ? K::kDcgmExporter : K::kTidalAgent;
  c.nvlink = pick & 2 ? K::kDcgmExporter : K::kTidalAgent;
  c.storage = pick & 4 ? K::kNodeExporter : K::kTidalAgent;
  if (pick & 8) c.dcgm_nvlink_series = tidal::DcgmNvlinkSeries::kBandwidthTotal;
  if (pick & 16) c.dcgm_node_label = "node";
  c.gpu_models["NVIDIA A100-SXM4-40GB"] = tidal::GpuModelInfo{(pick & 32) != 0, 4, 100};
  const std::string_view body = tidal::fuzz::AsText(data + 1, size - 1);
  tidal::prom::QueryResult r;
  if (!tidal::prom::ParseQueryResponse(body, 200, &r).ok()) return 0;
  // The same result as series and as sample times: both readers see every shape.
  const tidal::MetricsSnapshot s = tidal::BuildSourcedSnapshot(r, r, c, "node", 0);
  for (const auto& [name, m] : s.nodes) {
    if (!m.usable) {
      TIDAL_FUZZ_CHECK(!m.problems.empty(), "an unusable node says why");
      continue;
    }
    TIDAL_FUZZ_CHECK(m.problems.empty() && !m.gpus.empty(), "a usable node is a whole reading");
    TIDAL_FUZZ_CHECK(m.sample_time_ms != 0, "a usable node has a sample time");
    for (const auto& g : m.gpus) {
      TIDAL_FUZZ_CHECK(g.memory_total > 0 && g.memory_used >= 0, "memory is positive");
      TIDAL_FUZZ_CHECK(g.memory_used <= g.memory_total, "used never exceeds total");
      TIDAL_FUZZ_CHECK(g.nvlink_utilization >= 0 && g.nvlink_utilization <= 1,
                       "utilisation is in [0, 1]");
      for (const auto& p : g.nvlink_peers)
        TIDAL_FUZZ_CHECK(p.peer != g.index && p.links > 0, "peers are other GPUs");
    }
    TIDAL_FUZZ_CHECK(std::isfinite(m.storage_await_ms) && m.storage_await_ms >= 0,
                     "await is finite");
    TIDAL_FUZZ_CHECK(std::isfinite(m.nvlink_competition), "competition is finite");
  }
  return 0;
}
