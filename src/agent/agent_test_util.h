#pragma once
// Test helpers for the agent: sample lookup, temporary directories and files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "tidal/agent/metrics.h"

namespace tidal::agent::testing {

// The value of the first sample of `name` whose labels include all of `want`.
inline std::optional<double> Find(const MetricSet& set, std::string_view name,
                                  const LabelPairs& want = {}) {
  for (const MetricFamily& f : set.families()) {
    if (f.name != name) continue;
    for (const Sample& s : f.samples) {
      bool all = true;
      for (const auto& w : want) {
        bool hit = false;
        for (const auto& l : s.labels) hit = hit || l == w;
        all = all && hit;
      }
      if (all) return s.value;
    }
  }
  return std::nullopt;
}

inline std::size_t Count(const MetricSet& set, std::string_view name) {
  for (const MetricFamily& f : set.families())
    if (f.name == name) return f.samples.size();
  return 0;
}

// A directory under $TMPDIR removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tidal-agent-test-XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, const std::string& content) const {
    const std::string p = path_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tidal::agent::testing
