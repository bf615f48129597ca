#pragma once
// Helpers for tests that run programs: temporary directories, child processes
// that are always reaped, free loopback ports, and a real Prometheus.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tidal::testing {

class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tidal-test-XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
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

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A loopback port that was free a moment ago.
inline int FreeLoopbackPort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

// A child process (argv[0] is a path, not searched), stdout and stderr to
// `out_file`; killed and reaped when it goes out of scope.
class Process {
 public:
  Process(std::vector<std::string> argv, const std::string& out_file, const std::string& cwd = "") {
    std::vector<char*> av;
    for (auto& a : argv) av.push_back(a.data());
    av.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    if (posix_spawn(&pid_, av[0], &fa, nullptr, av.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Process() { Stop(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool started() const { return pid_ > 0; }
  // The exit code, or -1 if it was killed by a signal or never started.
  int Wait() {
    if (pid_ <= 0) return -1;
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && !Reaped(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  bool Reaped() {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return false;
  }
  pid_t pid_ = -1;
};

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

// Runs a program to completion in `dir` (a scratch directory for its output).
inline RunResult RunProgram(std::vector<std::string> argv, const ScratchDir& dir,
                            const std::string& cwd = "") {
  static int counter = 0;
  const std::string out = dir.path() + "/run-" + std::to_string(++counter) + ".out";
  Process p(std::move(argv), out, cwd);
  RunResult r;
  r.exit_code = p.Wait();
  r.out = Slurp(out);
  return r;
}

// Polls with a generous bound: tests assert what arrives, not how fast.
template <typename F>
bool Eventually(F f, int seconds = 60) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Finds a program on PATH; empty when absent.
inline std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  std::string d;
  while (std::getline(ss, d, ':')) {
    const std::string p = (d.empty() ? "." : d) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

inline constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";
inline constexpr const char* kPromtoolBinary = "/usr/bin/promtool";

// A real Prometheus on loopback over `data_dir` (which may hold imported
// blocks), with no scrape targets; retention is long so that recorded series
// with old timestamps are kept.
class PrometheusServer {
 public:
  PrometheusServer(const ScratchDir& dir, const std::string& data_dir) : port_(FreeLoopbackPort()) {
    const std::string config =
        dir.Write("prometheus-" + std::to_string(port_) + ".yml", "global: {}\n");
    log_ = dir.path() + "/prometheus-" + std::to_string(port_) + ".log";
    process_ = std::make_unique<Process>(
        std::vector<std::string>{kPrometheusBinary, "--config.file=" + config,
                                 "--storage.tsdb.path=" + data_dir,
                                 "--storage.tsdb.retention.time=100y",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        log_);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool started() const { return process_->started(); }
  std::string log() const { return Slurp(log_); }

 private:
  int port_;
  std::string log_;
  std::unique_ptr<Process> process_;
};

}  // namespace tidal::testing
