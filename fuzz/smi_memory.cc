// `nvidia-smi -q -d MEMORY` (and full `-q`) output: an error Status or one reading
// per GPU section with memory figures that fit in bytes; and the --query-gpu CSV.
#include "check.h"
#include "tidal/agent/gpu.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<tidal::agent::GpuReading> gpus;
  const tidal::Status st = tidal::agent::ParseSmiMemory(tidal::fuzz::AsText(data, size), &gpus);
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(!st.reason().empty(), "a parse error says why");
    return 0;
  }
  for (const tidal::agent::GpuReading& g : gpus) {
    if (g.memory_total && g.memory_used)
      TIDAL_FUZZ_CHECK(*g.memory_total % (1024 * 1024) == 0 && *g.memory_used % (1024 * 1024) == 0,
                       "MiB figures convert to whole bytes");
  }
  // The same bytes as a --query-gpu CSV (the fallback's UUID and model).
  std::vector<tidal::agent::SmiGpuIdentity> ids;
  const tidal::Status id_st = tidal::agent::ParseSmiGpuCsv(tidal::fuzz::AsText(data, size), &ids);
  if (!id_st.ok()) TIDAL_FUZZ_CHECK(!id_st.reason().empty(), "a CSV parse error says why");
  for (const auto& id : ids) TIDAL_FUZZ_CHECK(id.index >= 0, "GPU indices are not negative");
  return 0;
}
