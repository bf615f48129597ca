#include "tidal/policy/snapshot_file.h"

#include <fstream>
#include <set>

#include "tidal/core/file.h"
#include "tidal/core/status.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

namespace {

Gpu ReadGpu(const YAML::Node& g, const std::string& path, int position, ConfigErrors& errors) {
  Gpu gpu;
  gpu.index = position;
  if (!g.IsMap()) {
    errors.Add(path, "expected a mapping");
    return gpu;
  }
  CheckKeys(
      g, path,
      {"index", "uuid", "model", "memoryTotal", "memoryUsed", "nvlinkPeers", "nvlinkUtilization"},
      errors);
  ReadInt(g, path, "index", &gpu.index, errors);
  if (gpu.index < 0 || gpu.index >= kMaxGpusPerNode)
    errors.Add(Join(path, "index"), std::to_string(gpu.index) + " is outside [0, 63]");
  ReadString(g, path, "uuid", &gpu.uuid, errors);
  ReadString(g, path, "model", &gpu.model, errors);
  if (!g["memoryTotal"]) errors.Add(Join(path, "memoryTotal"), "required");
  ReadBytes(g, path, "memoryTotal", &gpu.memory_total, errors);
  ReadBytes(g, path, "memoryUsed", &gpu.memory_used, errors);
  if (gpu.memory_used > gpu.memory_total && gpu.memory_total > 0)
    errors.Add(Join(path, "memoryUsed"), "is larger than memoryTotal");
  ReadDouble(g, path, "nvlinkUtilization", &gpu.nvlink_utilization, errors);
  if (!(gpu.nvlink_utilization >= 0 && gpu.nvlink_utilization <= 1))
    errors.Add(Join(path, "nvlinkUtilization"), "is outside [0, 1]");
  const std::string pp = Join(path, "nvlinkPeers");
  if (IsMap(g["nvlinkPeers"], pp, errors)) {
    for (const auto& kv : g["nvlinkPeers"]) {
      const std::string key = kv.first.Scalar();
      int peer = -1, links = 0;
      try {
        peer = std::stoi(key);
        links = kv.second.as<int>();
      } catch (...) {
        errors.Add(Join(pp, key), "expected GPU index: link count, e.g. {1: 12}");
        continue;
      }
      if (peer < 0 || peer >= kMaxGpusPerNode || links < 0 || links > 64) {
        errors.Add(Join(pp, key), "GPU index or link count out of range");
        continue;
      }
      if (links > 0) gpu.nvlink_peers.push_back({peer, links});
    }
  }
  return gpu;
}

}  // namespace

std::vector<NodeState> LoadNodeSnapshot(const YAML::Node& root, int nvlink_slots_per_gpu) {
  ConfigErrors errors;
  std::vector<NodeState> out;
  if (!root || !root.IsMap() || !root["nodes"] || !root["nodes"].IsSequence())
    throw InputError{"snapshot: expected a mapping with a list under \"nodes\""};
  CheckKeys(root, "", {"nodes"}, errors);
  const YAML::Node nodes = root["nodes"];
  std::set<std::string> names;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = "nodes[" + std::to_string(i) + "]";
    const YAML::Node n = nodes[i];
    if (!n.IsMap()) {
      errors.Add(path, "expected a mapping");
      continue;
    }
    NodeState node;
    CheckKeys(n, path,
              {"name", "labels", "allocatableGPUs", "gpusRequested", "storageAwaitMs",
               "nvlinkCompetition", "nvlinkPods", "metricsKnown", "gpus"},
              errors);
    ReadString(n, path, "name", &node.name, errors);
    if (node.name.empty()) errors.Add(Join(path, "name"), "required");
    if (!names.insert(node.name).second)
      errors.Add(Join(path, "name"), "duplicate node " + node.name);
    ReadLabels(n["labels"], Join(path, "labels"), &node.labels, errors);
    ReadInt(n, path, "allocatableGPUs", &node.allocatable_gpus, errors);
    ReadInt(n, path, "gpusRequested", &node.gpus_requested, errors);
    ReadDouble(n, path, "storageAwaitMs", &node.storage_await_ms, errors);
    if (node.storage_await_ms < 0) errors.Add(Join(path, "storageAwaitMs"), "must be >= 0");
    ReadDouble(n, path, "nvlinkCompetition", &node.nvlink_competition, errors);
    if (node.nvlink_competition < 0) errors.Add(Join(path, "nvlinkCompetition"), "must be >= 0");
    ReadBool(n, path, "metricsKnown", &node.metrics_known, errors);
    const YAML::Node gpus = n["gpus"];
    if (gpus && !gpus.IsNull()) {
      if (!gpus.IsSequence()) {
        errors.Add(Join(path, "gpus"), "expected a list");
      } else {
        std::set<int> seen;
        for (std::size_t j = 0; j < gpus.size(); ++j) {
          const std::string gp = Join(path, "gpus") + "[" + std::to_string(j) + "]";
          Gpu g = ReadGpu(gpus[j], gp, static_cast<int>(j), errors);
          if (!seen.insert(g.index).second)
            errors.Add(Join(gp, "index"), "duplicate GPU index " + std::to_string(g.index));
          node.gpus.push_back(std::move(g));
        }
      }
    }
    if (n["nvlinkPods"]) {
      int pods = 0;
      ReadInt(n, path, "nvlinkPods", &pods, errors);
      if (pods < 0) errors.Add(Join(path, "nvlinkPods"), "must be >= 0");
      if (n["nvlinkCompetition"])
        errors.Add(Join(path, "nvlinkPods"), "give nvlinkPods or nvlinkCompetition, not both");
      node.nvlink_competition =
          NvlinkCompetitionIndex(pods, static_cast<int>(node.gpus.size()), nvlink_slots_per_gpu);
    }
    node.Finalize();
    out.push_back(std::move(node));
  }
  if (!errors.empty()) throw InputError{errors.Joined()};
  return out;
}

std::vector<NodeState> LoadNodeSnapshotFile(const std::string& path, int nvlink_slots_per_gpu) {
  const std::string text = ReadRegularFileOrThrow(path, kMaxDataFileBytes);
  try {
    return LoadNodeSnapshot(YAML::Load(text), nvlink_slots_per_gpu);
  } catch (const YAML::Exception& e) {
    throw InputError{path + ": not valid YAML or JSON: " + e.what()};
  } catch (const InputError& e) {
    throw InputError{path + ": " + e.message};
  }
}

}  // namespace tidal
