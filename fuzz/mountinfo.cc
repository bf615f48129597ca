// /proc/self/mountinfo with the --mount paths to resolve: the input's first line
// holds the paths (space separated), the rest is the mountinfo text.
#include <string>

#include "check.h"
#include "tidal/agent/diskstats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [first, mountinfo] = tidal::fuzz::SplitOnce(tidal::fuzz::AsText(data, size), "\n");
  std::vector<std::string> paths;
  while (!first.empty()) {
    auto [p, rest] = tidal::fuzz::SplitOnce(first, " ");
    if (!p.empty()) paths.emplace_back(p);
    first = rest;
  }
  std::vector<std::pair<unsigned, unsigned>> devices;
  const tidal::Status st = tidal::agent::MountDevices(mountinfo, paths, &devices);
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(!st.reason().empty(), "an unresolvable path is named");
    return 0;
  }
  TIDAL_FUZZ_CHECK(devices.size() <= paths.size(), "at most one device per path");
  return 0;
}
