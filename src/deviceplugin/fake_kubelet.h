#pragma once
// A fake kubelet for tests: the Registration service on <dir>/kubelet.sock, and
// the calls the kubelet's device manager makes on a plugin's socket
// (ListAndWatch kept open on its own thread, GetPreferredAllocation, Allocate).
// Used by deviceplugin_kubelet_test and by tidal-fake-kubelet, the e2e tests'
// kubelet. Nothing here knows the plugin's code: only the API v1beta1, so the
// plugin is seen from where the kubelet sees it.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin/api/v1beta1.grpc.pb.h"

namespace tidal::deviceplugin::fake {

class Kubelet final : public v1beta1::Registration::Service {
 public:
  explicit Kubelet(std::string path) : path_(std::move(path)) { Start(); }
  ~Kubelet() override { Stop(); }
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  // Serves on the socket; false when it cannot (the path is too long, the directory missing).
  bool Start() {
    unlink(path_.c_str());
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + path_, grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
    return server_ != nullptr;
  }
  // What a kubelet restart looks like from the directory: its socket goes and
  // comes back as a new file.
  bool Restart() {
    Stop();
    return Start();
  }
  bool serving() const { return server_ != nullptr; }
  void Stop() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    unlink(path_.c_str());
  }
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(*req);
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }
  std::vector<v1beta1::RegisterRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // Until `n` registrations arrived or `timeout`; false on timeout.
  bool WaitForRequests(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }

 private:
  std::string path_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> requests_;
};

// device ID -> "Healthy" or "Unhealthy".
using DeviceList = std::map<std::string, std::string>;

inline DeviceList ToDeviceList(const v1beta1::ListAndWatchResponse& r) {
  DeviceList out;
  for (const auto& d : r.devices()) out[d.id()] = d.health();
  return out;
}

// A ListAndWatch stream read on its own thread, as the kubelet keeps it open.
// `on_list` (optional) sees each list as it arrives, on that thread.
class Watch {
 public:
  explicit Watch(v1beta1::DevicePlugin::Stub& stub,
                 std::function<void(const DeviceList&)> on_list = nullptr)
      : on_list_(std::move(on_list)) {
    reader_ = stub.ListAndWatch(&ctx_, v1beta1::Empty());
    thread_ = std::thread([this] {
      v1beta1::ListAndWatchResponse r;
      while (reader_->Read(&r)) {
        const DeviceList list = ToDeviceList(r);
        if (on_list_) on_list_(list);
        std::lock_guard<std::mutex> lock(mu_);
        lists_.push_back(list);
        cv_.notify_all();
      }
      const grpc::Status s = reader_->Finish();
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = s.ok() ? "ended" : s.error_message();
      cv_.notify_all();
    });
  }
  ~Watch() {
    ctx_.TryCancel();
    thread_.join();
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // The n-th list (from 1), waiting up to `timeout` for it; empty when it did not come.
  DeviceList List(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return lists_.size() >= n || !ended_.empty(); });
    return lists_.size() >= n ? lists_[n - 1] : DeviceList{};
  }
  // The last list so far (empty before the first).
  DeviceList Latest() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_.empty() ? DeviceList{} : lists_.back();
  }
  // "" while the stream is open, else why it ended.
  std::string ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }

 private:
  std::function<void(const DeviceList&)> on_list_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<DeviceList> lists_;
  std::string ended_;
};

inline std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& socket) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
}

// GetPreferredAllocation for one container, as the device manager asks it.
inline grpc::Status Prefer(v1beta1::DevicePlugin::Stub& stub,
                           const std::vector<std::string>& available, int size,
                           std::vector<std::string>* out) {
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : available) c->add_available_device_ids(id);
  c->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = stub.GetPreferredAllocation(&ctx, req, &resp);
  out->clear();
  if (s.ok() && resp.container_responses_size() == 1)
    for (const auto& id : resp.container_responses(0).device_ids()) out->push_back(id);
  return s;
}

// Allocate for one container of the given devices.
inline grpc::Status Allocate(v1beta1::DevicePlugin::Stub& stub, const std::vector<std::string>& ids,
                             v1beta1::ContainerAllocateResponse* out) {
  v1beta1::AllocateRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : ids) c->add_devices_ids(id);
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = stub.Allocate(&ctx, req, &resp);
  if (s.ok() && resp.container_responses_size() == 1) *out = resp.container_responses(0);
  return s;
}

}  // namespace tidal::deviceplugin::fake
