// tidal device-plugin: the kubelet device plugin that gives a pod the GPUs
// Tidal's /bind chose (docs/device-plugin.md).
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "cli/commands.h"
#include "cli/daemon_signals.h"
#include "tidal/core/status.h"
#include "tidal/deviceplugin/plugin.h"
#include "tidal/kube/config.h"

namespace tidal::cli {
namespace {

struct DevicePluginFlags {
  std::string node_name;
  std::string resource = "nvidia.com/gpu";
  int replicas = 1;
  std::string dir = "/var/lib/kubelet/device-plugins";
  std::string endpoint = "tidal-gpu.sock";
  std::string nvml_lib = "libnvidia-ml.so.1";
  std::string cdi_kind;
  int health_interval_s = 5;
  bool in_cluster = false;
  std::string kubeconfig, kube_context;
  std::string log_level = "info";
};

std::string NodeName(const DevicePluginFlags& f) {
  if (!f.node_name.empty()) return f.node_name;
  if (const char* env = std::getenv("NODE_NAME"); env && *env) return env;
  throw InputError{
      "no node name: give --node-name or set NODE_NAME (the DaemonSet sets it from "
      "spec.nodeName)"};
}

std::unique_ptr<kube::KubeClient> ApiClient(const DevicePluginFlags& f) {
  if (f.in_cluster == !f.kubeconfig.empty())
    throw InputError{
        "--in-cluster or --kubeconfig: give exactly one (the pods being admitted "
        "and their tidal.io/gpus come from the API server)"};
  return std::make_unique<kube::KubeClient>(
      f.in_cluster ? kube::InClusterEndpoint(kube::ProcessEnv(), kube::kServiceAccountDir)
                   : kube::LoadKubeconfig(f.kubeconfig, f.kube_context));
}

std::shared_ptr<spdlog::logger> Logger(const std::string& level_name) {
  auto log = std::make_shared<spdlog::logger>("tidal-device-plugin",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
  const auto level = spdlog::level::from_str(level_name);
  if (level == spdlog::level::off && level_name != "off")
    throw InputError{"--log-level " + level_name +
                     ": expected trace, debug, info, warn, error, critical or off"};
  log->set_level(level);
  return log;
}

void Check(const DevicePluginFlags& f) {
  if (f.endpoint.empty() || f.endpoint.find('/') != std::string::npos || f.endpoint == "." ||
      f.endpoint == ".." || f.endpoint == deviceplugin::kKubeletSocket)
    throw InputError{"--endpoint " + f.endpoint +
                     ": expected a socket file name in --dir, not a path, not kubelet.sock"};
  if (f.resource.find('/') == std::string::npos)
    throw InputError{"--resource " + f.resource +
                     ": expected an extended resource name with a domain, e.g. nvidia.com/gpu"};
  if (!f.cdi_kind.empty() && f.cdi_kind.find('/') == std::string::npos)
    throw InputError{"--cdi-kind " + f.cdi_kind + ": expected vendor/class, e.g. nvidia.com/gpu"};
}

int RunDevicePlugin(const DevicePluginFlags& f) {
  Check(f);
  const std::string node = NodeName(f);
  auto log = Logger(f.log_level);
  auto api = ApiClient(f);

  std::string why;
  std::unique_ptr<agent::GpuSource> nvml = agent::OpenNvml(f.nvml_lib, &why);
  if (!nvml) throw InputError{"NVML: " + why + " (the plugin advertises GPUs from NVML)"};
  deviceplugin::Inventory inv;
  if (Status s = deviceplugin::BuildInventory(*nvml, f.replicas, &inv); !s.ok())
    throw InputError{"NVML: " + s.reason()};
  std::unique_ptr<deviceplugin::XidSource> xids = deviceplugin::OpenNvmlXid(f.nvml_lib, &why);
  if (!xids) log->warn("XID events unavailable ({}); health from polling NVML alone", why);

  // Signals are taken synchronously by this thread; block them before any thread starts.
  const sigset_t sigs = TakeStopSignals();

  SystemClock clock;
  deviceplugin::DeviceState state(inv);
  deviceplugin::KubePodApiOptions po;
  po.node = node;
  po.resource = f.resource;
  deviceplugin::KubePodApi pods(*api, clock, po);
  deviceplugin::Allocator allocator(pods, log, {node, f.cdi_kind, 4096});
  deviceplugin::HealthMonitor health(state, nvml.get(), std::move(xids), log,
                                     f.health_interval_s * 1000);
  deviceplugin::PluginOptions o;
  o.dir = f.dir;
  o.endpoint = f.endpoint;
  o.resource = f.resource;
  deviceplugin::Plugin plugin(state, allocator, log, o);
  health.Start();
  if (Status s = plugin.Start(); !s.ok()) log->warn("{}; retrying every second", s.reason());
  log->info("node {}: {} GPUs × {} replicas as {}", node, inv.gpus.size(), f.replicas, f.resource);
  // Once a second: is the kubelet still the one we registered with?
  const timespec second{1, 0};
  int sig = -1;
  while ((sig = sigtimedwait(&sigs, nullptr, &second)) < 0) plugin.CheckKubelet();
  log->info("signal {}, stopping", sig);
  state.Stop();
  plugin.Stop();
  health.Stop();
  return 0;
}

}  // namespace

void AddDevicePlugin(CLI::App& app) {
  auto f = std::make_shared<DevicePluginFlags>();
  CLI::App* cmd = app.add_subcommand(
      "device-plugin",
      "Kubelet device plugin: advertises the node's GPUs and gives a pod the GPUs Tidal chose "
      "(tidal.io/gpus)");
  cmd->add_option("--node-name", f->node_name, "this node (default: $NODE_NAME)");
  cmd->add_option("--resource", f->resource, "extended resource to register")
      ->capture_default_str();
  cmd->add_option("--replicas", f->replicas, "time-slicing devices per GPU")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--dir", f->dir, "the kubelet's device-plugin directory")->capture_default_str();
  cmd->add_option("--endpoint", f->endpoint, "socket file name in --dir")->capture_default_str();
  cmd->add_option("--nvml-lib", f->nvml_lib, "NVML library to dlopen")->capture_default_str();
  cmd->add_option("--cdi-kind", f->cdi_kind,
                  "also return CDI devices <kind>=<GPU UUID>, e.g. nvidia.com/gpu (default: "
                  "NVIDIA_VISIBLE_DEVICES only)");
  cmd->add_option("--health-interval", f->health_interval_s, "seconds between NVML health polls")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd->add_flag("--in-cluster", f->in_cluster, "use the pod's service account for the API");
  cmd->add_option("--kubeconfig", f->kubeconfig, "kubeconfig file for the API");
  cmd->add_option("--kube-context", f->kube_context, "kubeconfig context (default: current)");
  cmd->add_option("--log-level", f->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  cmd->callback([f] {
    const int rc = RunDevicePlugin(*f);
    if (rc != 0) std::exit(rc);
  });
}

}  // namespace tidal::cli
