#include "tidal/agent/collector.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "tidal/core/file.h"

namespace tidal::agent {

std::int64_t SteadyClock::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

FileReader RealFileReader() {
  // Bounded and never blocking: a FIFO, device or directory given as a procfs
  // path is an error, and so is a file that never ends.
  return [](const std::string& path, std::string* out) {
    return ReadRegularFile(path, kMaxKernelFileBytes, out);
  };
}

}  // namespace tidal::agent
