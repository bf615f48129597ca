// The device plugin's reading of `tidal.io/gpus` (and the replica IDs the
// kubelet sends back): no crash, a list it accepts is exactly what FormatGpuList
// writes, and a refusal names the annotation with a bounded reason. Links only
// tidal::deviceplugin_core, none of the plugin's gRPC.
#include <set>
#include <string>

#include "check.h"
#include "tidal/deviceplugin/annotation.h"
#include "tidal/deviceplugin/devices.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidal::deviceplugin;
  const std::string_view text = tidal::fuzz::AsText(data, size);
  std::vector<int> gpus;
  const tidal::Status s = ParseGpuList(text, &gpus);
  if (s.ok()) {
    TIDAL_FUZZ_CHECK(!gpus.empty(), "an accepted list names a GPU");
    TIDAL_FUZZ_CHECK(FormatGpuList(gpus) == text, "an accepted list is in the one written form");
    const std::set<int> distinct(gpus.begin(), gpus.end());
    TIDAL_FUZZ_CHECK(distinct.size() == gpus.size(), "no GPU twice");
    TIDAL_FUZZ_CHECK(*distinct.begin() >= 0 && *distinct.rbegin() < kMaxGpus, "indices in range");
  } else {
    TIDAL_FUZZ_CHECK(gpus.empty(), "a refused list gives no GPU");
    TIDAL_FUZZ_CHECK(s.reason().find("tidal.io/gpus") != std::string::npos,
                     "a refusal names the annotation");
    TIDAL_FUZZ_CHECK(s.reason().size() < 400, "a refusal's reason is bounded");
  }

  // The checks against a node of four GPUs never give a GPU it lacks.
  Inventory inv;
  inv.replicas = 2;
  for (int i = 0; i < 4; ++i) inv.gpus.push_back({i, "GPU-" + std::to_string(i), true, ""});
  if (s.ok() && CheckChoice(inv, gpus, static_cast<int>(gpus.size())).ok()) {
    std::vector<std::string> out, all;
    for (const DeviceEntry& d : ListDevices(inv)) all.push_back(d.id);
    if (PreferDevices(inv, all, {}, static_cast<int>(gpus.size()), &gpus, &out).ok()) {
      std::vector<int> given;
      TIDAL_FUZZ_CHECK(GpusOfDevices(inv, out, &given).ok(), "advice names our devices");
      TIDAL_FUZZ_CHECK(
          std::set<int>(given.begin(), given.end()) == std::set<int>(gpus.begin(), gpus.end()),
          "advice follows the choice exactly");
    }
  }

  // The same bytes as a replica ID from the kubelet.
  std::string uuid;
  int k = 0;
  if (ParseReplicaId(text, &uuid, &k))
    TIDAL_FUZZ_CHECK(ReplicaId(uuid, k).size() <= text.size(), "a parsed ID is no longer written");
  return 0;
}
