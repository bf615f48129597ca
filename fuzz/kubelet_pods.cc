// The kubelet's /pods PodList (nlohmann-json, then each item through the pod
// decoder): a Status naming the item, or a count of NVLink pods that is at most
// the number of items.
#include <nlohmann/json.hpp>
#include <string>

#include "check.h"
#include "tidal/agent/pods.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = tidal::fuzz::AsText(data, size);
  int pods = -1;
  const tidal::Status st = tidal::agent::CountNvlinkPods(text, "gpu-node-1", &pods);
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(st.reason().rfind("pod list", 0) == 0, "errors name the pod list");
    TIDAL_FUZZ_CHECK(pods == 0, "a failed count reports no pods");
    return 0;
  }
  TIDAL_FUZZ_CHECK(pods >= 0, "the count is not negative");
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  TIDAL_FUZZ_CHECK(doc.is_object() && doc["items"].is_array(), "a counted list has items");
  TIDAL_FUZZ_CHECK(static_cast<std::size_t>(pods) <= doc["items"].size(),
                   "at most one NVLink pod per item");
  return 0;
}
