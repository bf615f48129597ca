// `nvidia-smi topo -m` matrices: a Status naming the line, or a topology whose
// tables all have the sizes its GPU and NIC lists say, and whose NVLink peers are
// GPUs of the node.
#include "tidal/gpu/topology.h"

#include "check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::GpuTopology topo;
  const tidal::Status st = tidal::ParseTopoMatrix(tidal::fuzz::AsText(data, size), &topo);
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(!st.reason().empty(), "a parse error says why");
    return 0;
  }
  const std::size_t n = topo.gpus.size();
  TIDAL_FUZZ_CHECK(topo.gpu_links.size() == n && topo.gpu_nic.size() == n, "one row per GPU");
  TIDAL_FUZZ_CHECK(topo.cpu_affinity.size() == n && topo.numa_affinity.size() == n,
                   "one affinity per GPU");
  for (std::size_t i = 0; i < n; ++i) {
    TIDAL_FUZZ_CHECK(topo.gpu_links[i].size() == n, "a GPU column per GPU");
    TIDAL_FUZZ_CHECK(topo.gpu_nic[i].size() == topo.nics.size(), "a NIC column per NIC");
    for (const tidal::NvlinkPeer& p : topo.PeersOf(static_cast<int>(i))) {
      TIDAL_FUZZ_CHECK(p.peer >= 0 && static_cast<std::size_t>(p.peer) < n, "peers are GPUs");
      TIDAL_FUZZ_CHECK(p.peer != static_cast<int>(i) && p.links > 0, "no self or empty links");
    }
  }
  return 0;
}
