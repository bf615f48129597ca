#include "tidal/agent/collector.h"

#include <chrono>
#include <fstream>
#include <sstream>

namespace tidal::agent {

std::int64_t SteadyClock::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

FileReader RealFileReader() {
  return [](const std::string& path, std::string* out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::Error(path + ": cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    *out = std::move(ss).str();
    return Status();
  };
}

}  // namespace tidal::agent
