// Pod files as tidal explain reads them: YAML (yaml-cpp), or JSON when the text
// starts with '{', then their demand.
#include "tidal/kubetypes/pod_yaml.h"

#include "pod_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = tidal::fuzz::AsText(data, size);
  tidal::RawPod pod;
  const tidal::Status st = tidal::DecodePodYaml(text, &pod);
  if (!st.ok()) {
    tidal::fuzz::CheckFailedDecode(st, pod);
  } else {
    tidal::fuzz::CheckDemand(pod);
  }
  // The dispatching entry point must agree with the decoder it picks.
  tidal::RawPod again;
  const tidal::Status by_text = tidal::DecodePodText(text, &again);
  if (!by_text.ok()) tidal::fuzz::CheckFailedDecode(by_text, again);
  return 0;
}
