// tidal agent: the node agent "ai-node-metrics" (GPU memory, NVLink, disk IO for Prometheus).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/daemon_signals.h"
#include "cli/version.h"
#include "tidal/agent/agent.h"
#include "tidal/agent/disk_collector.h"
#include "tidal/agent/gpu.h"
#include "tidal/agent/http.h"
#include "tidal/agent/pods.h"
#include "tidal/core/status.h"

namespace tidal::cli {
namespace {

struct AgentFlags {
  std::string listen = "127.0.0.1:9410";
  std::string interval = "10s";
  std::string node_name;
  std::string nvml_lib = "libnvidia-ml.so.1";
  std::string nvidia_smi = "nvidia-smi";
  int smi_timeout_ms = 5000;
  std::string procfs = "/proc";
  std::vector<std::string> mounts;
  bool include_dm = false;
  std::string kubelet_url;
  std::string kubelet_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string kubelet_ca;
  bool kubelet_insecure = false;
  std::string service_account_ca = agent::kServiceAccountCa;
  std::string pods_file;
  int nvlink_slots = 2;
  bool once = false;
};

// "10s", "500ms", "1m" or a bare number of seconds.
std::int64_t ParseIntervalMs(const std::string& s) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw InputError{"--interval " + s + ": expected a duration such as 10s or 500ms"};
  }
  const std::string unit = s.substr(used);
  double ms = 0;
  if (unit.empty() || unit == "s") {
    ms = v * 1000;
  } else if (unit == "ms") {
    ms = v;
  } else if (unit == "m") {
    ms = v * 60'000;
  } else {
    throw InputError{"--interval " + s + ": unknown unit '" + unit + "' (use ms, s or m)"};
  }
  if (!(ms >= 100)) throw InputError{"--interval " + s + ": must be at least 100ms"};
  return static_cast<std::int64_t>(ms);
}

// An absolute path as given, else the first match on PATH (execve does not search).
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t pos = 0;
  while (pos <= dirs.size()) {
    std::size_t end = dirs.find(':', pos);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(pos, end - pos) + "/" + name;
    if (end > pos && access(candidate.c_str(), X_OK) == 0) return candidate;
    pos = end + 1;
  }
  return "";
}

std::string NodeName(const AgentFlags& f) {
  if (!f.node_name.empty()) return f.node_name;
  if (const char* env = std::getenv("NODE_NAME"); env && *env) return env;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0 && host[0]) return host;
  throw InputError{"no node name: give --node-name or set NODE_NAME"};
}

// The process's wiring, start to stop, in one function on purpose: every object
// here lives until the agent stops, destroyed in reverse order of construction
// (the HTTP server before the collectors it reads).
int RunAgent(const AgentFlags& f) {
  const std::int64_t interval_ms = ParseIntervalMs(f.interval);
  const std::string node = NodeName(f);
  const std::size_t colon = f.listen.rfind(':');
  if (!f.once && colon == std::string::npos)
    throw InputError{"--listen " + f.listen + ": expected host:port"};
  static agent::SteadyClock clock;  // outlives the agent thread

  std::string nvml_why;
  std::unique_ptr<agent::GpuSource> gpu_source = agent::OpenNvml(f.nvml_lib, &nvml_why);
  std::string missing;
  if (!gpu_source) {
    const std::string smi = ResolveProgram(f.nvidia_smi);
    if (!smi.empty()) {
      std::cerr << "tidal agent: NVML unavailable (" << nvml_why << "); using " << smi << "\n";
      gpu_source = agent::MakeNvidiaSmiSource(smi, f.smi_timeout_ms, agent::RunProgram);
    } else {
      missing = "NVML unavailable (" + nvml_why + ") and no nvidia-smi (" + f.nvidia_smi + ")";
      std::cerr << "tidal agent: " << missing << "; GPU series are left out\n";
    }
  }
  auto gpu = std::make_unique<agent::GpuCollector>(std::move(gpu_source), missing);
  agent::GpuCollector* gpu_ptr = gpu.get();

  agent::PodListSource pods;
  if (!f.pods_file.empty()) {
    pods = [path = f.pods_file, read = agent::RealFileReader()](std::string* out) {
      return read(path, out);
    };
  } else if (!f.kubelet_url.empty()) {
    agent::KubeletOptions k;
    const auto exists = [](const std::string& path) { return access(path.c_str(), R_OK) == 0; };
    if (Status st = agent::ResolveKubeletTrust(f.kubelet_url, f.kubelet_ca, f.kubelet_insecure,
                                               f.service_account_ca, exists, &k);
        !st.ok())
      throw InputError{st.reason()};
    if (k.insecure_skip_verify)
      std::cerr << "tidal agent: the kubelet's certificate is NOT verified "
                   "(--kubelet-insecure-skip-verify)\n";
    k.token_file = f.kubelet_token_file;
    pods = agent::KubeletPodSource(k);
  }

  agent::DiskOptions disk;
  disk.procfs = f.procfs;
  disk.mounts = f.mounts;
  disk.include_dm = f.include_dm;

  std::vector<std::unique_ptr<agent::Collector>> collectors;
  collectors.push_back(
      std::make_unique<agent::DiskCollector>(disk, agent::RealFileReader(), clock));
  collectors.push_back(std::move(gpu));
  // Without a pod source there is no competition collector (not a failing one):
  // tidal serve and tidal rebalance count the NVLink pods from the API server.
  if (pods)
    collectors.push_back(std::make_unique<agent::CompetitionCollector>(
        node, pods, [gpu_ptr] { return gpu_ptr->gpu_count(); }, f.nvlink_slots));
  agent::AgentOptions options{node, interval_ms, TidalBuild()};
  options.warn = [](const std::string& what) { std::cerr << "tidal agent: " << what << "\n"; };
  agent::Agent a(std::move(options), std::move(collectors), clock);

  if (f.once) {
    IgnoreBrokenPipes();  // an https kubelet read once is still a TLS connection
    // Rates need two samples: take a second one a little later.
    a.CollectOnce();
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min<std::int64_t>(interval_ms, 1000)));
    a.CollectOnce();
    std::cout << a.Latest()->text << std::flush;
    return 0;
  }

  // Signals are taken synchronously by this thread; block them before any thread starts.
  const sigset_t sigs = TakeStopSignals();

  a.Start();
  agent::MetricsServer server(a);
  const std::string host = f.listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(f.listen.substr(colon + 1));
  } catch (const std::exception&) {
    throw InputError{"--listen " + f.listen + ": the port is not a number"};
  }
  if (Status st = server.Start(host, port); !st.ok()) {
    a.Stop();
    throw InputError{st.reason()};
  }
  std::cerr << "tidal agent: node " << node << ", serving http://" << host << ":" << server.port()
            << "/metrics, collecting every " << interval_ms << " ms\n";
  int sig = 0;
  sigwait(&sigs, &sig);
  server.Stop();
  a.Stop();
  return 0;
}

}  // namespace

void AddAgent(CLI::App& app) {
  auto f = std::make_shared<AgentFlags>();
  CLI::App* cmd = app.add_subcommand(
      "agent", "Node agent ai-node-metrics: GPU memory, NVLink and disk IO metrics for Prometheus");
  cmd->add_option("--listen", f->listen, "host:port for /metrics and /healthz")
      ->capture_default_str();
  cmd->add_option("--interval", f->interval, "collection interval (10s, 500ms)")
      ->capture_default_str();
  cmd->add_option("--node-name", f->node_name, "value of the node label (default: $NODE_NAME)");
  cmd->add_option("--nvml-lib", f->nvml_lib, "NVML library to dlopen")->capture_default_str();
  cmd->add_option("--nvidia-smi", f->nvidia_smi, "nvidia-smi used when NVML cannot be loaded")
      ->capture_default_str();
  cmd->add_option("--nvidia-smi-timeout-ms", f->smi_timeout_ms, "kill nvidia-smi after this long")
      ->capture_default_str();
  cmd->add_option("--procfs", f->procfs, "root of the proc filesystem")->capture_default_str();
  cmd->add_option("--mount", f->mounts, "watch only the devices under these paths (repeatable)");
  cmd->add_flag("--include-dm", f->include_dm, "include device-mapper devices in the default set");
  cmd->add_option("--kubelet-url", f->kubelet_url,
                  "kubelet pod list, e.g. https://$NODE_IP:10250/pods");
  cmd->add_option("--kubelet-token-file", f->kubelet_token_file, "bearer token for the kubelet")
      ->capture_default_str();
  cmd->add_option("--kubelet-ca", f->kubelet_ca,
                  "CA that signed the kubelet's serving certificate (default: the "
                  "service-account CA when present)");
  cmd->add_option("--service-account-ca", f->service_account_ca,
                  "CA used for the kubelet when --kubelet-ca is not given (if it exists)")
      ->capture_default_str();
  cmd->add_flag("--kubelet-insecure-skip-verify", f->kubelet_insecure,
                "accept any kubelet certificate (the bearer token is then exposed to whoever "
                "answers)");
  cmd->add_option("--pods-file", f->pods_file, "a PodList JSON file instead of the kubelet");
  cmd->add_option("--nvlink-slots", f->nvlink_slots, "NVLink pod slots per GPU")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--once", f->once, "print one collection to stdout and exit");
  cmd->callback([f] {
    const int rc = RunAgent(*f);
    if (rc != 0) std::exit(rc);
  });
}

}  // namespace tidal::cli
