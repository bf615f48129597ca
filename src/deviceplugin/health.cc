#include "tidal/deviceplugin/health.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace tidal::deviceplugin {

Inventory DeviceState::Snapshot(std::uint64_t* version) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (version) *version = version_;
  return inv_;
}

void DeviceState::SetHealth(int index, bool healthy, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(inv_.gpus.begin(), inv_.gpus.end(),
                           [index](const Gpu& g) { return g.index == index; });
    if (it == inv_.gpus.end() || (it->healthy == healthy && it->why == why)) return;
    const bool flipped = it->healthy != healthy;
    it->healthy = healthy;
    it->why = healthy ? "" : why;
    // Only health goes on the wire; a new reason alone is not worth a resend.
    if (!flipped) return;
    ++version_;
  }
  cv_.notify_all();
}

bool DeviceState::Wait(std::uint64_t seen, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return stopped_ || version_ != seen; });
  return !stopped_;
}

void DeviceState::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool DeviceState::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

Status BuildInventory(agent::GpuSource& source, int replicas, Inventory* out) {
  agent::GpuReadout r;
  if (Status s = source.Read(&r); !s.ok()) return s;
  Inventory inv;
  inv.replicas = replicas;
  for (const agent::GpuReading& g : r.gpus) {
    // A GPU with no UUID cannot be named to the kubelet or the container runtime.
    if (g.uuid.empty())
      return Status::Error(
          fmt::format("GPU {}: no UUID ({})", g.index, g.error.empty() ? "empty" : g.error));
    inv.gpus.push_back({g.index, g.uuid, g.error.empty(), g.error});
  }
  if (inv.gpus.empty()) return Status::Error(std::string(source.Name()) + ": no GPU");
  *out = std::move(inv);
  return Status::Ok();
}

bool IsApplicationXid(std::uint64_t xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return true;
    default:
      return false;
  }
}

HealthMonitor::HealthMonitor(DeviceState& state, agent::GpuSource* source,
                             std::unique_ptr<XidSource> xids, std::shared_ptr<spdlog::logger> log,
                             int poll_ms)
    : state_(state),
      source_(source),
      xids_(std::move(xids)),
      log_(std::move(log)),
      poll_ms_(poll_ms) {}

HealthMonitor::~HealthMonitor() { Stop(); }

void HealthMonitor::PollOnce() {
  if (!source_) return;
  agent::GpuReadout r;
  const Status s = source_->Read(&r);
  const Inventory inv = state_.Snapshot();
  std::vector<int> xid_failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    xid_failed = xid_failed_;
  }
  for (const Gpu& g : inv.gpus) {
    if (std::count(xid_failed.begin(), xid_failed.end(), g.index)) continue;
    std::string why = s.ok() ? "gone from NVML's device list" : s.reason();
    bool healthy = false;
    for (const agent::GpuReading& reading : r.gpus) {
      if (reading.index != g.index) continue;
      // Another GPU in this slot (the UUID changed) is not the one advertised.
      healthy = reading.error.empty() && reading.uuid == g.uuid;
      why = reading.error.empty() ? "UUID is now " + reading.uuid : reading.error;
    }
    if (healthy != g.healthy)
      log_->warn("GPU {} ({}) is {}{}", g.index, g.uuid,
                 healthy ? "healthy" : "unhealthy: ", healthy ? "" : why);
    state_.SetHealth(g.index, healthy, why);
  }
}

bool HealthMonitor::XidOnce(int timeout_ms) {
  XidEvent e;
  if (!xids_ || !xids_->Wait(timeout_ms, &e)) return false;
  if (IsApplicationXid(e.xid)) {
    log_->info("GPU {}: XID {} (an application's error; the GPU stays healthy)", e.gpu, e.xid);
    return true;
  }
  const std::string why = fmt::format("XID {}", e.xid);
  std::vector<int> hit;
  for (const Gpu& g : state_.Snapshot().gpus)
    if (e.gpu < 0 || g.index == e.gpu) hit.push_back(g.index);
  for (int index : hit) {
    log_->error("GPU {}: {}: its devices are unhealthy until the plugin restarts", index, why);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!std::count(xid_failed_.begin(), xid_failed_.end(), index)) xid_failed_.push_back(index);
    }
    state_.SetHealth(index, false, why);
  }
  return true;
}

bool HealthMonitor::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void HealthMonitor::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  if (source_)
    poll_thread_ = std::thread([this] {
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [this] { return stop_; }))
            return;
        }
        PollOnce();
      }
    });
  // NVML's wait has a timeout: half a second bounds how long Stop() waits for it.
  if (xids_)
    xid_thread_ = std::thread([this] {
      while (!Stopping()) XidOnce(500);
    });
}

void HealthMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
  if (xid_thread_.joinable()) xid_thread_.join();
}

}  // namespace tidal::deviceplugin
