#pragma once
// Turns the kubelet's GetPreferredAllocation and Allocate calls into Tidal's GPU
// choice. Under one lock per node (this process; one plugin runs per node) it
// lists the node's pods, takes the pod the kubelet is admitting (SelectPod), checks
// its `tidal.io/gpus` against the node and the request, and on Allocate marks the
// pod `tidal.io/gpus-allocated` before answering, so the next call cannot take
// the same pod. docs/device-plugin.md explains the race this closes.
#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tidal/deviceplugin/devices.h"
#include "tidal/deviceplugin/pod_api.h"

namespace tidal::deviceplugin {

struct AllocatorOptions {
  std::string node;
  // CDI kind for cdi_devices ("nvidia.com/gpu" gives nvidia.com/gpu=<UUID>); "": none.
  std::string cdi_kind;
  // Served UIDs kept at most this many (oldest dropped): bounded memory.
  std::size_t max_served = 4096;
};

// What one container gets.
struct ContainerGrant {
  std::vector<int> gpus;           // GPU indices
  std::vector<std::string> uuids;  // their UUIDs, for NVIDIA_VISIBLE_DEVICES
  std::vector<std::string> cdi_devices;
  std::string pod;           // namespace/name when the pod was identified, else ""
  bool from_choice = false;  // Tidal's annotation, not the fallback rule
};

class Allocator {
 public:
  Allocator(PodApi& api, std::shared_ptr<spdlog::logger> log, AllocatorOptions options);

  // GetPreferredAllocation for one container. Unresolvable (with the reason)
  // when the pod's annotation is refused.
  Status Prefer(const Inventory& inv, const std::vector<std::string>& available,
                const std::vector<std::string>& must_include, int size,
                std::vector<std::string>* out);
  // Allocate for one container given the devices the kubelet picked.
  // Unresolvable when the annotation is refused: the kubelet then fails the pod.
  Status Allocate(const Inventory& inv, const std::vector<std::string>& device_ids,
                  ContainerGrant* out);

 private:
  struct Found {
    const NodePod* pod = nullptr;
    std::vector<int> choice;  // parsed, checked; empty without an annotation
    Status refused;           // the annotation was refused, and why
  };
  // With mu_ held. `pods` keeps what `found` points into.
  Found FindPod(const Inventory& inv, int request, std::vector<NodePod>* pods);
  void Refuse(const NodePod& pod, const Status& why);
  void Serve(const std::string& uid);
  void Grant(const Inventory& inv, const std::vector<int>& gpus, ContainerGrant* out) const;

  PodApi& api_;
  std::shared_ptr<spdlog::logger> log_;
  AllocatorOptions options_;
  std::mutex mu_;  // the per-node allocation lock
  std::set<std::string> served_;
  std::vector<std::string> served_order_;
};

}  // namespace tidal::deviceplugin
