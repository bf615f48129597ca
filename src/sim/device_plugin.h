#pragma once
// Which GPUs inside its node a pod really gets: the device plugin's choice, not
// the scheduler's (docs/simulator.md, "Device plugins"). Private to the simulator.
#include <optional>
#include <vector>

namespace tidal::sim {

// NVIDIA's stock device plugin with time-slicing: `count` replicas taken one at a
// time, each from the GPU with the fewest replicas held (`held[g]`, counting the
// ones this pod has just taken), the lowest index on ties; a GPU whose
// `replicas_per_gpu` are all held is skipped. A pod may so get two replicas of one
// GPU. None when the node has fewer than `count` replicas free.
std::optional<std::vector<int>> LeastSharedGpus(std::vector<int> held, int replicas_per_gpu,
                                                int count);

}  // namespace tidal::sim
