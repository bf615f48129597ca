#pragma once
// The kubelet device plugin (API v1beta1 over gRPC on a unix socket): serves the
// DevicePlugin service on <dir>/<endpoint>, registers `resource` with the
// kubelet on <dir>/kubelet.sock, and does both again when the kubelet restarts
// (it recreates kubelet.sock and removes every plugin socket in the directory).
// No gRPC type in this header: the generated code stays inside the library.
#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "tidal/core/status.h"
#include "tidal/deviceplugin/allocator.h"
#include "tidal/deviceplugin/health.h"

namespace tidal::deviceplugin {

inline constexpr const char* kApiVersion = "v1beta1";
inline constexpr const char* kKubeletSocket = "kubelet.sock";

struct PluginOptions {
  std::string dir = "/var/lib/kubelet/device-plugins";
  std::string endpoint = "tidal-gpu.sock";  // a file name in `dir`
  std::string resource = "nvidia.com/gpu";
  int register_timeout_ms = 5'000;
  // How often ListAndWatch looks for its end (shutdown, kubelet gone) between changes.
  int stream_poll_ms = 200;
};

class Plugin {
 public:
  Plugin(DeviceState& state, Allocator& allocator, std::shared_ptr<spdlog::logger> log,
         PluginOptions options);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // Serves on the socket and registers. Error with the reason when either fails
  // (a kubelet that is not there yet is retried by CheckKubelet).
  Status Start();
  // Called every second or so: when kubelet.sock is a new file (the kubelet
  // restarted) or our socket is gone, serves again and registers again. True
  // when it registered.
  bool CheckKubelet();
  void Stop();
  int registrations() const;
  std::string socket_path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidal::deviceplugin
