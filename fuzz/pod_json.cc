// Pod objects as JSON (simdjson), as the extender receives them, then their demand.
#include "pod_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::RawPod pod;
  const tidal::Status st = tidal::DecodePodJson(tidal::fuzz::AsText(data, size), &pod);
  if (!st.ok()) {
    tidal::fuzz::CheckFailedDecode(st, pod);
    return 0;
  }
  tidal::fuzz::CheckDemand(pod);
  return 0;
}
