#include "tidal/deviceplugin/plugin.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "deviceplugin/api/v1beta1.grpc.pb.h"

namespace tidal::deviceplugin {
namespace {

grpc::Status Refused(const Status& s) {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, s.reason());
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  return out;
}

class Service final : public v1beta1::DevicePlugin::Service {
 public:
  Service(DeviceState& state, Allocator& allocator, int poll_ms)
      : state_(state), allocator_(allocator), poll_ms_(poll_ms) {}
  void Stop() { stopping_ = true; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    std::uint64_t sent = 0;
    while (!stopping_ && !ctx->IsCancelled()) {
      std::uint64_t version = 0;
      const Inventory inv = state_.Snapshot(&version);
      if (version != sent) {
        v1beta1::ListAndWatchResponse r;
        for (const DeviceEntry& d : ListDevices(inv)) {
          v1beta1::Device* dev = r.add_devices();
          dev->set_id(d.id);
          dev->set_health(d.healthy ? "Healthy" : "Unhealthy");
        }
        if (!writer->Write(r)) break;
        sent = version;
      }
      if (!state_.Wait(sent, poll_ms_)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override {
    const Inventory inv = state_.Snapshot();
    for (const auto& c : req->container_requests()) {
      const std::vector<std::string> available(c.available_device_ids().begin(),
                                               c.available_device_ids().end());
      const std::vector<std::string> must(c.must_include_device_ids().begin(),
                                          c.must_include_device_ids().end());
      std::vector<std::string> ids;
      if (Status s = allocator_.Prefer(inv, available, must, c.allocation_size(), &ids); !s.ok())
        return Refused(s);
      auto* r = out->add_container_responses();
      for (auto& id : ids) r->add_device_ids(std::move(id));
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override {
    const Inventory inv = state_.Snapshot();
    for (const auto& c : req->container_requests()) {
      const std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
      ContainerGrant grant;
      if (Status s = allocator_.Allocate(inv, ids, &grant); !s.ok()) return Refused(s);
      auto* r = out->add_container_responses();
      (*r->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = Join(grant.uuids);
      for (const std::string& name : grant.cdi_devices) r->add_cdi_devices()->set_name(name);
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  DeviceState& state_;
  Allocator& allocator_;
  int poll_ms_;
  std::atomic<bool> stopping_{false};
};

// Which file a path is: a recreated socket is another inode (or the same inode
// number reused, with a new change time).
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
};

FileId Identify(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino,
          static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

}  // namespace

struct Plugin::Impl {
  Impl(DeviceState& s, Allocator& a, std::shared_ptr<spdlog::logger> l, PluginOptions o)
      : state(s), allocator(a), log(std::move(l)), options(std::move(o)) {}
  DeviceState& state;
  Allocator& allocator;
  std::shared_ptr<spdlog::logger> log;
  PluginOptions options;
  std::mutex mu;  // guards everything below
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  FileId kubelet_seen;  // kubelet.sock when we last registered
  FileId ours;          // our socket as we created it
  bool registered = false;
  std::atomic<int> registrations{0};

  std::string Path(const std::string& name) const { return options.dir + "/" + name; }

  void StopServing() {
    if (!server) return;
    service->Stop();
    // The streams see Stop() within stream_poll_ms; the deadline cancels what remains.
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server.reset();
    service.reset();
  }

  Status Serve() {
    StopServing();
    const std::string path = Path(options.endpoint);
    unlink(path.c_str());  // a socket left by an earlier run would fail the bind
    service = std::make_unique<Service>(state, allocator, options.stream_poll_ms);
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    b.RegisterService(service.get());
    server = b.BuildAndStart();
    if (!server) {
      service.reset();
      return Status::Error("cannot serve on " + path);
    }
    ours = Identify(path);
    return Status::Ok();
  }

  Status Register() {
    const std::string kubelet = Path(kKubeletSocket);
    kubelet_seen = Identify(kubelet);
    auto channel = grpc::CreateChannel("unix:" + kubelet, grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    v1beta1::RegisterRequest req;
    req.set_version(kApiVersion);
    req.set_endpoint(options.endpoint);
    req.set_resource_name(options.resource);
    req.mutable_options()->set_get_preferred_allocation_available(true);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(options.register_timeout_ms));
    v1beta1::Empty empty;
    const grpc::Status s = stub->Register(&ctx, req, &empty);
    registered = s.ok();
    if (!s.ok())
      return Status::Error(fmt::format("register {} with the kubelet at {}: {}", options.resource,
                                       kubelet, s.error_message()));
    ++registrations;
    log->info("registered {} with the kubelet ({}), serving on {}", options.resource, kubelet,
              Path(options.endpoint));
    return Status::Ok();
  }
};

Plugin::Plugin(DeviceState& state, Allocator& allocator, std::shared_ptr<spdlog::logger> log,
               PluginOptions options)
    : impl_(std::make_unique<Impl>(state, allocator, std::move(log), std::move(options))) {}

Plugin::~Plugin() { Stop(); }

Status Plugin::Start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (Status s = impl_->Serve(); !s.ok()) return s;
  return impl_->Register();
}

bool Plugin::CheckKubelet() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const FileId kubelet = Identify(impl_->Path(kKubeletSocket));
  if (!kubelet.exists) return false;  // the kubelet is down: wait for its new socket
  const bool ours_gone = Identify(impl_->Path(impl_->options.endpoint)) != impl_->ours;
  const bool restarted = kubelet != impl_->kubelet_seen;
  if (impl_->registered && !ours_gone && !restarted) return false;
  impl_->log->info("kubelet socket {}{}: serving and registering again",
                   restarted ? "recreated" : "unchanged", ours_gone ? ", ours removed" : "");
  if (ours_gone || !impl_->server)
    if (Status s = impl_->Serve(); !s.ok()) {
      impl_->log->error("{}", s.reason());
      return false;
    }
  if (Status s = impl_->Register(); !s.ok()) {
    impl_->log->warn("{}", s.reason());
    return false;
  }
  return true;
}

void Plugin::Stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->StopServing();
  unlink(impl_->Path(impl_->options.endpoint).c_str());
}

int Plugin::registrations() const { return impl_->registrations.load(); }

std::string Plugin::socket_path() const { return impl_->Path(impl_->options.endpoint); }

}  // namespace tidal::deviceplugin
