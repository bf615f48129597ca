#pragma once
// The advertised devices and their health. DeviceState is the one copy the
// gRPC streams read: every change bumps its version and wakes each ListAndWatch,
// which then sends the whole list again. HealthMonitor feeds it from NVML: a GPU
// that stops answering (lost, unknown error, gone from the count) is unhealthy
// until it answers again; a critical XID makes it unhealthy until the plugin restarts,
// as NVIDIA's plugin does (the GPU needs a reset).
#include <spdlog/logger.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tidal/agent/gpu.h"
#include "tidal/deviceplugin/devices.h"

namespace tidal::deviceplugin {

class DeviceState {
 public:
  explicit DeviceState(Inventory inv) : inv_(std::move(inv)) {}
  Inventory Snapshot(std::uint64_t* version = nullptr) const;
  // Sets a GPU's health; a change bumps the version and wakes the waiters.
  void SetHealth(int index, bool healthy, const std::string& why);
  // Waits until the version differs from `seen`, Stop(), or `timeout_ms`.
  // False once stopped.
  bool Wait(std::uint64_t seen, int timeout_ms) const;
  void Stop();
  bool stopped() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Inventory inv_;
  std::uint64_t version_ = 1;
  bool stopped_ = false;
};

// From NVML's index and UUID per GPU (the agent's GpuSource), `replicas` each.
// Error when NVML read nothing, or a GPU has no UUID to name its devices by.
Status BuildInventory(agent::GpuSource& source, int replicas, Inventory* out);

// One XID event: the GPU (NVML index) and the XID number.
struct XidEvent {
  int gpu = -1;
  std::uint64_t xid = 0;
};

class XidSource {
 public:
  virtual ~XidSource() = default;
  // Waits up to `timeout_ms` for a critical-error event; false on timeout.
  virtual bool Wait(int timeout_ms, XidEvent* out) = 0;
};

// NVML's event API (nvmlEventSetCreate, nvmlDeviceRegisterEvents for critical
// XIDs, nvmlEventSetWait_v2), loaded with dlopen like the agent's source. Null
// with `why` when the library or its event calls are missing (then health comes
// from polling alone).
std::unique_ptr<XidSource> OpenNvmlXid(const std::string& library, std::string* why);

// XIDs caused by the application, not the GPU (NVIDIA's plugin skips the same:
// 13 graphics engine exception, 31 MMU fault, 43 stopped by the driver, 45
// preemptive cleanup, 68 video decoder, 109 context switch timeout).
bool IsApplicationXid(std::uint64_t xid);

class HealthMonitor {
 public:
  // `source` and `xids` may be null (no polling, no events).
  HealthMonitor(DeviceState& state, agent::GpuSource* source, std::unique_ptr<XidSource> xids,
                std::shared_ptr<spdlog::logger> log, int poll_ms);
  ~HealthMonitor();
  // One poll of NVML: what the thread does every poll_ms.
  void PollOnce();
  // One XID wait of at most `timeout_ms`; true when an event was handled.
  bool XidOnce(int timeout_ms);
  void Start();
  void Stop();

 private:
  DeviceState& state_;
  agent::GpuSource* source_;
  std::unique_ptr<XidSource> xids_;
  std::shared_ptr<spdlog::logger> log_;
  int poll_ms_;
  std::mutex mu_;  // guards xid_failed_, stop_
  std::condition_variable cv_;
  std::vector<int> xid_failed_;  // GPUs a critical XID hit: unhealthy for good
  bool stop_ = false;
  bool Stopping();
  std::thread poll_thread_, xid_thread_;
};

}  // namespace tidal::deviceplugin
