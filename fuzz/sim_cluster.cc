// The simulator's cluster files: only InputError comes out of LoadClusterSpec
// (LoadClusterFile reports YAML syntax errors itself); a loaded cluster has
// GPU link tables of its GPU count.
#include <string>

#include "check.h"
#include "tidal/core/status.h"
#include "tidal/sim/spec.h"
#include "yaml_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::optional<YAML::Node> parsed = tidal::fuzz::AsYaml(data, size);
  if (!parsed) return 0;
  const YAML::Node& root = *parsed;
  tidal::sim::ClusterSpec cluster;
  try {
    cluster = tidal::sim::LoadClusterSpec(root, "cluster.yaml");
  } catch (const tidal::InputError& e) {
    TIDAL_FUZZ_CHECK(e.message.rfind("cluster.yaml", 0) == 0, "errors name the file");
    return 0;
  }
  for (const tidal::sim::NodeSpec& n : cluster.nodes) {
    TIDAL_FUZZ_CHECK(n.gpu_count >= 0 && n.replicas_per_gpu >= 1, "GPU counts are sane");
    TIDAL_FUZZ_CHECK(n.links.size() == static_cast<std::size_t>(n.gpu_count), "a link row per GPU");
    for (const auto& row : n.links)
      TIDAL_FUZZ_CHECK(row.size() == static_cast<std::size_t>(n.gpu_count),
                       "a link column per GPU");
  }
  return 0;
}
