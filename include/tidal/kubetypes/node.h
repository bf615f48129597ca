#pragma once
// What the API server says about a node (a v1.Node's metadata, spec and
// allocatable resources): the one node type the Kubernetes client, the
// extender's wire decoding and the rebalancer share. Live load comes from the
// metrics layer (core's NodeState joins the two).
#include <cstdint>
#include <string>

#include "tidal/core/types.h"

namespace tidal {

struct KubeNode {
  std::string name;
  std::string resource_version;
  Labels labels;
  int allocatable_gpus = -1;  // status.allocatable["nvidia.com/gpu"]; -1: not advertised
  std::int64_t cpu_milli_allocatable = 0;
  Bytes memory_allocatable = 0;
  bool unschedulable = false;  // spec.unschedulable: cordoned
};

}  // namespace tidal
