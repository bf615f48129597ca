// The nvidia-smi fallback: memory from `nvidia-smi -q -d MEMORY`, UUID and model
// from `--query-gpu`, NVLink peers from `nvidia-smi topo -m`, all run without a
// shell and with a timeout.
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
#include "tidal/core/text.h"
#include "tidal/gpu/topology.h"

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
    close_range(3, ~0U, 0);    // no agent socket leaks into the child
    signal(SIGPIPE, SIG_DFL);  // the agent ignores it; nvidia-smi gets the default back
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
  Lines lines(text);
  for (std::string_view line; lines.Next(&line);) {
    const int line_no = lines.number();
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

// Cells nvidia-smi prints for a value it does not have.
bool IsMissing(std::string_view v) {
  return v.empty() || v == "N/A" || v.starts_with("[N/A") || v.starts_with("[Not Supported") ||
         v.starts_with("[Requested functionality") || v.starts_with("[Unknown");
}

std::vector<std::string_view> SplitCells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    cells.push_back(Trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) return cells;
    start = comma + 1;
  }
}

std::string UpperHex(std::string_view v) {
  std::string s(v);
  for (char& c : s)
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

}  // namespace

Status ParseSmiGpuCsv(std::string_view text, std::vector<SmiGpuIdentity>* out) {
  out->clear();
  int col_index = -1, col_uuid = -1, col_name = -1, col_bus = -1;
  std::size_t columns = 0;
  Lines lines(text);
  for (std::string_view line; lines.Next(&line);) {
    const int line_no = lines.number();
    if (Trim(line).empty()) continue;
    const std::vector<std::string_view> cells = SplitCells(line);
    if (columns == 0) {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        std::string_view h = cells[i];
        if (const std::size_t unit = h.find(" ["); unit != std::string_view::npos)
          h = h.substr(0, unit);
        const int at = static_cast<int>(i);
        if (h == "index") col_index = at;
        if (h == "uuid") col_uuid = at;
        if (h == "name") col_name = at;
        if (h == "pci.bus_id") col_bus = at;
      }
      if (col_index < 0)
        return Status::Error("nvidia-smi --query-gpu line " + std::to_string(line_no) +
                             ": expected a header with an \"index\" column");
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns)
      return Status::Error("nvidia-smi --query-gpu line " + std::to_string(line_no) + ": " +
                           std::to_string(cells.size()) + " cells, expected " +
                           std::to_string(columns) + " as in the header");
    SmiGpuIdentity id;
    const std::string_view idx = cells[static_cast<std::size_t>(col_index)];
    const auto r = std::from_chars(idx.data(), idx.data() + idx.size(), id.index);
    if (r.ec != std::errc() || r.ptr != idx.data() + idx.size() || id.index < 0)
      return Status::Error("nvidia-smi --query-gpu line " + std::to_string(line_no) + ": index \"" +
                           std::string(idx.substr(0, 20)) + "\" is not a GPU index");
    auto cell = [&](int col) {
      if (col < 0) return std::string();
      const std::string_view v = cells[static_cast<std::size_t>(col)];
      return IsMissing(v) ? std::string() : std::string(v);
    };
    id.uuid = cell(col_uuid);
    id.model = cell(col_name);
    id.bus_id = UpperHex(cell(col_bus));
    out->push_back(std::move(id));
  }
  if (columns == 0) return Status::Error("nvidia-smi --query-gpu: empty output");
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
    // UUID and model are optional too: without them the series keep empty labels.
    Status id_st =
        run_({path_, "--query-gpu=index,uuid,name,pci.bus_id", "--format=csv"}, timeout_ms_, &text);
    std::vector<SmiGpuIdentity> ids;
    if (id_st.ok()) id_st = ParseSmiGpuCsv(text, &ids);
    if (id_st.ok()) {
      FillIdentity(ids, &out->gpus);
    } else {
      out->error = "identity: " + id_st.reason();
    }
    // Topology is optional: memory alone is still worth serving.
    Status st = run_({path_, "topo", "-m"}, timeout_ms_, &text);
    GpuTopology topo;
    if (st.ok()) st = ParseTopoMatrix(text, &topo);
    if (!st.ok()) {
      out->error += (out->error.empty() ? "" : "; ") + std::string("topology: ") + st.reason();
      return Status();
    }
    for (GpuReading& g : out->gpus) {
      g.peers = topo.PeersOf(g.index);
    }
    return Status();
  }

 private:
  // Matched by PCI bus id, which both outputs carry; by index when a row has none.
  static void FillIdentity(const std::vector<SmiGpuIdentity>& ids, std::vector<GpuReading>* gpus) {
    for (GpuReading& g : *gpus) {
      const std::string bus = UpperHex(g.bus_id);
      const SmiGpuIdentity* match = nullptr;
      for (const SmiGpuIdentity& id : ids)
        if (id.bus_id.empty() ? id.index == g.index : id.bus_id == bus) match = &id;
      if (!match) continue;
      if (g.uuid.empty()) g.uuid = match->uuid;
      if (g.model.empty()) g.model = match->model;
    }
  }
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
