// Node snapshot files (tidal explain --nodes): YAML or JSON. Only InputError or a
// YAML error (both reported with the path by LoadNodeSnapshotFile) may come out;
// a loaded snapshot holds only values the policy can use.
#include <cmath>
#include <set>
#include <string>

#include "check.h"
#include "tidal/core/status.h"
#include "tidal/policy/snapshot_file.h"
#include "yaml_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::optional<YAML::Node> parsed = tidal::fuzz::AsYaml(data, size);
  if (!parsed) return 0;
  const YAML::Node& root = *parsed;
  std::vector<tidal::NodeState> nodes;
  try {
    nodes = tidal::LoadNodeSnapshot(root, 2);
  } catch (const tidal::InputError& e) {
    TIDAL_FUZZ_CHECK(!e.message.empty(), "an input error says what is wrong");
    return 0;
  } catch (const YAML::Exception&) {
    return 0;  // LoadNodeSnapshotFile turns it into an InputError naming the file
  }
  std::set<std::string> names;
  for (const tidal::NodeState& n : nodes) {
    TIDAL_FUZZ_CHECK(!n.name.empty() && names.insert(n.name).second, "node names are unique");
    TIDAL_FUZZ_CHECK(n.storage_await_ms >= 0 && std::isfinite(n.storage_await_ms),
                     "await is finite and not negative");
    TIDAL_FUZZ_CHECK(n.nvlink_competition >= 0 && std::isfinite(n.nvlink_competition),
                     "the competition index is finite and not negative");
    for (const tidal::Gpu& g : n.gpus) {
      TIDAL_FUZZ_CHECK(g.index >= 0 && g.index < tidal::kMaxGpusPerNode, "GPU index in range");
      TIDAL_FUZZ_CHECK(g.memory_total >= 0 && g.memory_used >= 0, "memory not negative");
      for (const tidal::NvlinkPeer& p : g.nvlink_peers)
        TIDAL_FUZZ_CHECK(p.peer >= 0 && p.peer < tidal::kMaxGpusPerNode && p.links > 0,
                         "NVLink peers in range");
    }
  }
  return 0;
}
