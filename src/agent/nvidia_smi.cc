// The nvidia-smi fallback: memory from `nvidia-smi -q -d MEMORY`, NVLink peers
// from `nvidia-smi topo -m`, both run without a shell and with a timeout.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "tidal/agent/gpu.h"
#include "tidal/policy/topology.h"

namespace tidal::agent {

Status RunProgram(const std::vector<std::string>& argv, int timeout_ms, std::string* out) {
  out->clear();
  if (argv.empty()) return Status::Error("no program to run");
  // Everything the child needs is prepared before fork: after it only
  // async-signal-safe calls are allowed (the agent has other threads).
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"), const_cast<char*>("LC_ALL=C"), nullptr};
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Error(std::string("pipe: ") + strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status::Error(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    close_range(3, ~0U, 0);  // no agent socket leaks into the child
    execve(args[0], args.data(), envp);
    _exit(127);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out->append(buf, static_cast<std::size_t>(got));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return Status::Error(argv[0] + ": killed after the " + std::to_string(timeout_ms) +
                         " ms timeout");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return Status::Error(argv[0] + ": cannot execute (exit 127)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Status::Error(argv[0] + ": failed (status " + std::to_string(status) + ")");
  return Status();
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::size_t Indent(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  return i;
}

// "81559 MiB" → bytes; "N/A" and friends → nullopt with ok; anything else is an error.
bool ParseMib(std::string_view v, std::optional<std::uint64_t>* out) {
  if (v == "N/A" || v == "[N/A]" || v == "Not Supported" || v == "[Not Supported]") {
    *out = std::nullopt;
    return true;
  }
  std::uint64_t n = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc() || Trim(std::string_view(r.ptr, v.data() + v.size() - r.ptr)) != "MiB")
    return false;
  *out = n << 20;
  return true;
}

}  // namespace

Status ParseSmiMemory(std::string_view text, std::vector<GpuReading>* out) {
  out->clear();
  enum class Block { kNone, kFb, kOther };
  Block block = Block::kNone;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string_view t = Trim(line);
    if (t.empty()) continue;
    const std::size_t ind = Indent(line);
    if (ind == 0) {
      block = Block::kNone;
      if (t.starts_with("GPU ")) {
        GpuReading g;
        g.index = static_cast<int>(out->size());
        g.bus_id = std::string(Trim(t.substr(4)));
        out->push_back(std::move(g));
      }
      continue;
    }
    if (out->empty()) continue;  // header lines (Timestamp, Driver Version)
    GpuReading& g = out->back();
    const std::size_t colon = t.find(':');
    const std::string_view key = Trim(t.substr(0, colon));
    const std::string_view value = colon == std::string_view::npos ? "" : Trim(t.substr(colon + 1));
    if (ind == 4) {
      block = colon == std::string_view::npos
                  ? (key == "FB Memory Usage" ? Block::kFb : Block::kOther)
                  : Block::kNone;
      if (key == "Product Name") g.model = std::string(value);
      if (key == "GPU UUID") g.uuid = std::string(value);
      continue;
    }
    if (block != Block::kFb || ind != 8 || colon == std::string_view::npos) continue;
    std::optional<std::uint64_t>* field = key == "Total"      ? &g.memory_total
                                          : key == "Used"     ? &g.memory_used
                                          : key == "Reserved" ? &g.memory_reserved
                                                              : nullptr;
    if (!field) continue;  // Free is derived
    if (!ParseMib(value, field)) {
      return Status::Error("nvidia-smi -q line " + std::to_string(line_no) + " \"" +
                           std::string(t.substr(0, 60)) + "\": expected \"<n> MiB\" or N/A");
    }
  }
  if (out->empty()) return Status::Error("nvidia-smi -q: no \"GPU <bus id>\" section found");
  return Status();
}

namespace {

class NvidiaSmiSource final : public GpuSource {
 public:
  NvidiaSmiSource(std::string path, int timeout_ms, CommandRunner run)
      : path_(std::move(path)), timeout_ms_(timeout_ms), run_(std::move(run)) {}
  std::string_view Name() const override { return "nvidia-smi"; }

  Status Read(GpuReadout* out) override {
    out->gpus.clear();
    out->error.clear();
    std::string text;
    if (Status st = run_({path_, "-q", "-d", "MEMORY"}, timeout_ms_, &text); !st.ok()) return st;
    if (Status st = ParseSmiMemory(text, &out->gpus); !st.ok()) return st;
    // Topology is optional: memory alone is still worth serving.
    Status st = run_({path_, "topo", "-m"}, timeout_ms_, &text);
    GpuTopology topo;
    if (st.ok()) st = ParseTopoMatrix(text, &topo);
    if (!st.ok()) {
      out->error = "topology: " + st.reason();
      return Status();
    }
    for (GpuReading& g : out->gpus) {
      g.peers = topo.PeersOf(g.index);
    }
    return Status();
  }

 private:
  std::string path_;
  int timeout_ms_;
  CommandRunner run_;
};

}  // namespace

std::unique_ptr<GpuSource> MakeNvidiaSmiSource(std::string nvidia_smi, int timeout_ms,
                                               CommandRunner run) {
  return std::make_unique<NvidiaSmiSource>(std::move(nvidia_smi), timeout_ms, std::move(run));
}

}  // namespace tidal::agent
