#pragma once
// The pods on this node as the device plugin needs them, and the rule that
// names the pod an Allocate call is for. The kubelet's device plugin API does not
// say which pod it is admitting; like HAMi, the plugin takes the pod bound here,
// not yet started, requesting as many devices, not yet served, that the kubelet
// admits first: the earliest bound (then created, then by name).
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"

namespace tidal::deviceplugin {

struct NodePod {
  std::string namespace_name, name, uid;
  std::string node;   // spec.nodeName
  std::string phase;  // status.phase
  bool deleting = false;
  bool started = false;  // a container has a state other than waiting
  // RFC 3339 UTC seconds as the API server writes them ("2026-01-02T03:04:05Z"),
  // which sort as text. bound: PodScheduled's lastTransitionTime (the binding),
  // else created.
  std::string created, bound;
  int request = 0;          // devices of the resource: max(Σ containers, any init container)
  bool has_choice = false;  // carries tidal.io/gpus
  std::string choice;       // its value
  bool allocated = false;   // carries tidal.io/gpus-allocated
  std::string Key() const { return namespace_name + "/" + name; }
};

// One pod object; `resource` is the extended resource counted (nvidia.com/gpu).
// Error naming the field when the JSON is not a pod.
Status DecodeNodePod(std::string_view json, std::string_view resource, NodePod* out);

// A PodList page: its pods (one undecodable item is skipped and counted in
// `skipped`, not fatal) and metadata.continue.
Status DecodeNodePodList(std::string_view json, std::string_view resource,
                         std::vector<NodePod>* pods, std::string* continue_token, int* skipped);

// The pod an allocation of `request` devices on `node` is for, or null. `served`
// holds the UIDs this plugin already allocated to (or refused) since it started.
const NodePod* SelectPod(const std::vector<NodePod>& pods, std::string_view node, int request,
                         const std::set<std::string>& served);

}  // namespace tidal::deviceplugin
