#pragma once
// A node snapshot written by hand or captured (tidal explain's NODES file):
//   nodes:
//     - name: node-01
//       labels: {tidal.io/pool: golden}
//       allocatableGPUs: 4
//       storageAwaitMs: 42.83
//       nvlinkCompetition: 0.25           # or nvlinkPods: 2 (index = pods / (GPUs × slots))
//       gpus:
//         - {index: 0, model: A10, memoryTotal: 24Gi, memoryUsed: 12544Mi, nvlinkPeers: {1: 12}}
// JSON is accepted too (it is YAML).
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "tidal/core/types.h"
#include "tidal/policy/config.h"

namespace tidal {

// Throws InputError listing every problem with its path (nodes[2].gpus[0].memoryUsed: ...).
std::vector<NodeState> LoadNodeSnapshot(const YAML::Node& root, int nvlink_slots_per_gpu = 2);
std::vector<NodeState> LoadNodeSnapshotFile(const std::string& path, int nvlink_slots_per_gpu = 2);

}  // namespace tidal
