#pragma once
// The annotations the device plugin reads and writes: `tidal.io/gpus`, the GPU
// indices the extender's /bind chose ("0,2"), and `tidal.io/gpus-allocated`, the
// ones this node really gave the pod, in the same grammar so that one parser
// reads both. No gRPC here: the fuzz target links only this.
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"
#include "tidal/kubetypes/pod.h"

namespace tidal::deviceplugin {

// NVML numbers GPUs from 0; no node has more than 64 (the extender's GpuSet).
inline constexpr int kMaxGpus = 64;

// "0,2": decimal GPU indices below kMaxGpus, separated by single commas, no
// spaces, no repeats, at least one. Any other text is an error naming the
// annotation, the offending part and what was expected; `out` is then empty.
Status ParseGpuList(std::string_view text, std::vector<int>* out);

// The inverse: "0,2".
std::string FormatGpuList(const std::vector<int>& gpus);

}  // namespace tidal::deviceplugin
