#pragma once
// Test helpers for tests that start processes and servers: temporary
// directories, free loopback ports, child processes killed at scope exit, and
// polling with a generous bound (tests assert what arrives, not how fast).
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

// A directory under $TMPDIR removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tidal-test-XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
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

inline int FreePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

// A child process, killed and reaped when it goes out of scope.
class Child {
 public:
  Child(std::vector<std::string> argv, const std::vector<std::string>& extra_env,
        const std::string& stdin_file, const std::string& out_file) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    for (const auto& e : extra_env) env.push_back(e);
    std::vector<char*> av, ev;
    for (auto& a : argv) av.push_back(a.data());
    av.push_back(nullptr);
    for (auto& e : env) ev.push_back(e.data());
    ev.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!stdin_file.empty())
      posix_spawn_file_actions_addopen(&fa, 0, stdin_file.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&pid_, av[0], &fa, nullptr, av.data(), ev.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() { Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // SIGTERM, then SIGKILL after 5 s; reaps the process.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && !Reap(false); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Reap(true);
    }
  }
  // Stops the process without a chance to clean up (a crash, a hang).
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  bool started() const { return pid_ > 0; }
  // Waits for the exit code.
  int Wait() {
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

 private:
  bool Reap(bool block) {
    int st = 0;
    if (waitpid(pid_, &st, block ? 0 : WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return false;
  }
  pid_t pid_ = -1;
};

// Polls with a generous bound: the test asserts what arrives, not how fast.
template <typename F>
bool Eventually(F f, int seconds = 60) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

// Runs a program (argv[0] a path) to completion; its output goes through a file in `dir`.
inline RunResult RunProgram(std::vector<std::string> argv, const TempDir& dir) {
  static int counter = 0;
  const std::string out = dir.path() + "/run-" + std::to_string(++counter) + ".out";
  Child c(std::move(argv), {}, "", out);
  RunResult r;
  if (c.started()) r.exit_code = c.Wait();
  r.out = ReadFile(out);
  return r;
}

// A program on PATH; empty when absent.
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

// A real Prometheus on loopback: `config` is prometheus.yml's text (no scrape
// targets by default), its TSDB is `data_dir` (which may hold imported blocks),
// on `port` (a free one when 0; a restart passes the old one). Retention is long
// so that recorded series with old timestamps are kept.
class PrometheusServer {
 public:
  PrometheusServer(const TempDir& dir, const std::string& data_dir,
                   const std::string& config = "global: {}\n", int port = 0)
      : port_(port > 0 ? port : FreePort()) {
    const std::string file = dir.Write("prometheus-" + std::to_string(port_) + ".yml", config);
    log_ = dir.path() + "/prometheus-" + std::to_string(port_) + ".log";
    child_ = std::make_unique<Child>(
        std::vector<std::string>{kPrometheusBinary, "--config.file=" + file,
                                 "--storage.tsdb.path=" + data_dir,
                                 "--storage.tsdb.retention.time=100y",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        std::vector<std::string>{}, "", log_);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool started() const { return child_->started(); }
  std::string log() const { return ReadFile(log_); }
  void Stop() { child_->Stop(); }

 private:
  int port_;
  std::string log_;
  std::unique_ptr<Child> child_;
};

}  // namespace tidal::testing
