#pragma once
// Runs the tidal binary in a test and captures its output and exit code.
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace tidal::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout, and stderr when merged
};

// `args` is appended to the binary's path; stderr is merged into out when asked.
inline CommandResult RunTidal(const std::string& args, bool merge_stderr = false) {
  std::string cmd = std::string("\"") + TIDAL_BINARY + "\" " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string Source(const std::string& rel) { return std::string(TIDAL_SOURCE_DIR) + "/" + rel; }

}  // namespace tidal::testing
