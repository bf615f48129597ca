#pragma once
// The GPU interconnect of one node, parsed from `nvidia-smi topo -m` (the agent
// also builds it from NVML). Cells: X, NV#, PIX, PXB, PHB, NODE, SYS.
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/status.h"
#include "tidal/core/types.h"

namespace tidal {

enum class LinkKind { kSelf, kNvlink, kPix, kPxb, kPhb, kNode, kSys, kUnknown };
std::string_view LinkKindName(LinkKind kind);

struct TopoCell {
  LinkKind kind = LinkKind::kUnknown;
  int nvlinks = 0;  // for kNvlink: the # of NV#
  friend bool operator==(const TopoCell&, const TopoCell&) = default;
};

struct GpuTopology {
  std::vector<std::string> gpus;                 // "GPU0", "GPU1", ... in row order
  std::vector<std::string> nics;                 // "NIC0"/"mlx5_0", ... in column order
  std::vector<std::vector<TopoCell>> gpu_links;  // [gpu][gpu]
  std::vector<std::vector<TopoCell>> gpu_nic;    // [gpu][nic]
  std::vector<std::string> cpu_affinity;         // per GPU, "" when N/A or absent
  std::vector<std::string> numa_affinity;        // per GPU, "" when N/A or absent
  std::vector<std::pair<std::string, std::string>> nic_legend;  // NIC0 → mlx5_0

  // NVLink peers of GPU `gpu` (by row index), with link counts.
  std::vector<NvlinkPeer> PeersOf(int gpu) const;
};

// Parses the matrix; tolerates TABs or spaces, ANSI escapes, NIC columns and
// the affinity columns. Anything it cannot read gives a Status naming the line.
Status ParseTopoMatrix(std::string_view text, GpuTopology* out);

}  // namespace tidal
