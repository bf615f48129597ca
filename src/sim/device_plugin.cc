#include "sim/device_plugin.h"

namespace tidal::sim {

std::optional<std::vector<int>> LeastSharedGpus(std::vector<int> held, int replicas_per_gpu,
                                                int count) {
  std::vector<int> gpus;
  for (int k = 0; k < count; ++k) {
    int best = -1;
    // Strictly fewer replicas to replace the best so far: ties stay with the lower index.
    for (int g = 0; g < static_cast<int>(held.size()); ++g)
      if (held[g] < replicas_per_gpu && (best < 0 || held[g] < held[best])) best = g;
    if (best < 0) return std::nullopt;
    ++held[best];  // the next replica sees this one taken
    gpus.push_back(best);
  }
  return gpus;
}

}  // namespace tidal::sim
