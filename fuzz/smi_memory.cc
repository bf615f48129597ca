// `nvidia-smi -q -d MEMORY` (and full `-q`) output: an error Status or one reading
// per GPU section with memory figures that fit in bytes.
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
  return 0;
}
