#pragma once
// What the plugin advertises and how it picks devices, without gRPC or the API:
// each GPU is `replicas` time-slicing devices "<UUID>::<k>" (as NVIDIA's plugin
// names replicas), all healthy or all unhealthy with their GPU.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"

namespace tidal::deviceplugin {

struct Gpu {
  int index = 0;     // NVML's index, the one `tidal.io/gpus` names
  std::string uuid;  // "GPU-…"
  bool healthy = true;
  std::string why;  // when unhealthy: the XID or the NVML error
};

struct Inventory {
  std::vector<Gpu> gpus;  // ascending index
  int replicas = 1;
  const Gpu* ByIndex(int index) const;
  const Gpu* ByUuid(std::string_view uuid) const;
};

std::string ReplicaId(std::string_view uuid, int replica);
// "<uuid>::<k>" with 0 <= k; false for anything else.
bool ParseReplicaId(std::string_view id, std::string* uuid, int* replica);

struct DeviceEntry {
  std::string id;
  bool healthy = true;
};
// Every replica of every GPU, in index then replica order.
std::vector<DeviceEntry> ListDevices(const Inventory& inv);

// Tidal's choice (`gpus`, from the annotation) checked against the node and the
// container's request of `request` devices: every GPU on this node and healthy,
// no more GPUs than devices requested. Unresolvable with the reason otherwise.
Status CheckChoice(const Inventory& inv, const std::vector<int>& gpus, int request);

// GetPreferredAllocation for one container: `size` devices from `available`,
// `must_include` first. With `chosen`, replicas of exactly those GPUs, spread
// over them in the annotation's order (Unfit when the kubelet has too few of
// their replicas free); without, the least-shared GPUs first (fewest replicas
// held, then lowest index), as NVIDIA's plugin does with time-slicing.
Status PreferDevices(const Inventory& inv, const std::vector<std::string>& available,
                     const std::vector<std::string>& must_include, int size,
                     const std::vector<int>* chosen, std::vector<std::string>* out);

// The GPUs behind device IDs the kubelet allocated, each once, in first-seen
// order. An ID that is not one of ours is an error naming it.
Status GpusOfDevices(const Inventory& inv, const std::vector<std::string>& ids,
                     std::vector<int>* gpus);

}  // namespace tidal::deviceplugin
