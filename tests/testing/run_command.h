#pragma once
// Runs the tidal binary in a test and captures its output and exit code.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace tidal::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout, and stderr when merged
};

// `args` is appended to the program's path; stderr is merged into out when asked.
inline CommandResult RunBinary(const std::string& program, const std::string& args,
                               bool merge_stderr = false) {
  std::string cmd = "\"" + program + "\" " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
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

inline CommandResult RunTidal(const std::string& args, bool merge_stderr = false) {
  return RunBinary(TIDAL_BINARY, args, merge_stderr);
}

inline std::string Source(const std::string& rel) {
  return std::string(TIDAL_SOURCE_DIR) + "/" + rel;
}

}  // namespace tidal::testing
