// The plugin as the kubelet sees it: a fake kubelet (the Registration service on
// a temporary kubelet.sock, and a client calling ListAndWatch,
// GetPreferredAllocation and Allocate the way the device manager does), the
// stand-in NVML, and the fake API server for the pods.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <stdlib.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "deviceplugin/fake_kubelet.h"
#include "testing/fake_apiserver.h"
#include "tidal/deviceplugin/plugin.h"

namespace tidal::deviceplugin {
namespace {

using json = nlohmann::json;
constexpr auto kWait = std::chrono::seconds(20);  // a bound on a hang, never an assertion on time

// Events are not served by the fake API server: this records them on the way.
class EventRecorder final : public kube::Transport {
 public:
  explicit EventRecorder(kube::Transport& inner) : inner_(inner) {}
  kube::HttpResponse Do(const kube::HttpRequest& r) override {
    if (r.method == "POST" && r.path.ends_with("/events")) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(json::parse(r.body));
      return {201, "{}", ""};
    }
    return inner_.Do(r);
  }
  kube::HttpResponse Stream(const std::string& p,
                            const std::function<bool(std::string_view)>& f) override {
    return inner_.Stream(p, f);
  }
  void CancelStreams() override { inner_.CancelStreams(); }
  std::string Describe() const override { return inner_.Describe(); }
  std::vector<json> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  kube::Transport& inner_;
  std::mutex mu_;
  std::vector<json> events_;
};

json NodePodJson(const std::string& name, int gpus, const std::string& annotation,
                 const std::string& created, const std::string& node = "n1") {
  json a = json::object();
  if (!annotation.empty()) a["tidal.io/gpus"] = annotation;
  json p = testing::TestPod("ml", name, gpus, node, "Pending", a);
  p["metadata"]["creationTimestamp"] = created;
  return p;
}

struct Fixture {
  explicit Fixture(int replicas = 2, std::string resource = "nvidia.com/gpu") {
    EXPECT_TRUE(kubelet.serving());
    setenv("TIDAL_NVML_STUB_SCRIPT", (dir.path() + "/nvml.script").c_str(), 1);
    Script("gpu 0 uuid GPU-aaa\ngpu 1 uuid GPU-bbb\n");
    std::string why;
    nvml = agent::OpenNvml(TIDAL_NVML_STUB, &why);
    EXPECT_NE(nvml, nullptr) << why;
    Inventory inv;
    EXPECT_TRUE(BuildInventory(*nvml, replicas, &inv).ok());
    state = std::make_unique<DeviceState>(inv);
    monitor = std::make_unique<HealthMonitor>(*state, nvml.get(), nullptr, log, 60'000);
    std::string error;
    kube::Endpoint e = *kube::ParseServerUrl(api.url(), &error);
    e.ca_pem = pki.ca_pem;
    e.token = "secret";
    client = std::make_unique<kube::KubeClient>(e);
    events = std::make_unique<EventRecorder>(*client);
    KubePodApiOptions po;
    po.node = "n1";
    po.resource = resource;
    // The fake API server knows only the "spec.nodeName!=" selector; the plugin
    // still keeps only this node's pods itself.
    po.node_selector = false;
    pods = std::make_unique<KubePodApi>(*events, clock, po);
    allocator =
        std::make_unique<Allocator>(*pods, log, AllocatorOptions{"n1", "nvidia.com/gpu", 64});
    PluginOptions o;
    o.dir = dir.path();
    o.resource = resource;
    o.stream_poll_ms = 20;
    plugin = std::make_unique<Plugin>(*state, *allocator, log, o);
  }
  void Script(const std::string& s) { std::ofstream(dir.path() + "/nvml.script") << s; }
  std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial() { return fake::Dial(plugin->socket_path()); }
  std::string Allocated(const std::string& name) {
    const json p = api.pod("ml", name);
    return p["metadata"]["annotations"].value("tidal.io/gpus-allocated", "");
  }

  testing::TempDir dir;
  testing::TestPki pki = testing::MakeTestPki(dir);
  testing::FakeApiServer api{pki, "secret"};
  ManualClock clock{1'767'225'600'000};  // 2026-01-01T00:00:00Z
  std::shared_ptr<spdlog::logger> log =
      std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
  fake::Kubelet kubelet{dir.path() + "/kubelet.sock"};
  std::unique_ptr<agent::GpuSource> nvml;
  std::unique_ptr<DeviceState> state;
  std::unique_ptr<HealthMonitor> monitor;
  std::unique_ptr<kube::KubeClient> client;
  std::unique_ptr<EventRecorder> events;
  std::unique_ptr<KubePodApi> pods;
  std::unique_ptr<Allocator> allocator;
  std::unique_ptr<Plugin> plugin;
};

std::vector<std::string> AllDevices(int replicas) {
  std::vector<std::string> ids;
  for (const char* uuid : {"GPU-aaa", "GPU-bbb"})
    for (int k = 0; k < replicas; ++k) ids.push_back(std::string(uuid) + "::" + std::to_string(k));
  return ids;
}

TEST(DevicePlugin, RegistersItsResourceAndAgainAfterTheKubeletRestarts) {
  struct Case {
    const char* name;
    std::string resource;
  };
  const Case cases[] = {{"the default resource", "nvidia.com/gpu"},
                        {"a configured resource", "tidal.io/gpu-shared"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f(2, c.resource);
    ASSERT_TRUE(f.plugin->Start().ok());
    ASSERT_EQ(f.kubelet.requests().size(), 1u);
    const v1beta1::RegisterRequest r = f.kubelet.requests()[0];
    EXPECT_EQ(r.version(), "v1beta1");
    EXPECT_EQ(r.endpoint(), "tidal-gpu.sock");
    EXPECT_EQ(r.resource_name(), c.resource);
    EXPECT_TRUE(r.options().get_preferred_allocation_available());
    EXPECT_FALSE(f.plugin->CheckKubelet());  // nothing changed: no second registration

    // The kubelet restarts: a new kubelet.sock, and it removed our socket.
    ASSERT_TRUE(f.kubelet.Restart());
    unlink(f.plugin->socket_path().c_str());
    EXPECT_TRUE(f.plugin->CheckKubelet());
    ASSERT_EQ(f.kubelet.requests().size(), 2u);
    EXPECT_EQ(f.kubelet.requests()[1].resource_name(), c.resource);
    EXPECT_EQ(access(f.plugin->socket_path().c_str(), F_OK), 0);
    // The new socket serves.
    auto stub = f.Dial();
    v1beta1::DevicePluginOptions opts;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &opts).ok());
    EXPECT_TRUE(opts.get_preferred_allocation_available());
    EXPECT_FALSE(opts.pre_start_required());
    f.plugin->Stop();
  }
}

TEST(DevicePlugin, WaitsForAKubeletThatIsNotThereYet) {
  Fixture f;
  f.kubelet.Stop();
  EXPECT_FALSE(f.plugin->Start().ok());
  EXPECT_FALSE(f.plugin->CheckKubelet());  // still no kubelet.sock
  ASSERT_TRUE(f.kubelet.Start());
  EXPECT_TRUE(f.plugin->CheckKubelet());
  EXPECT_EQ(f.kubelet.requests().size(), 1u);
}

TEST(DevicePlugin, AdvertisesReplicasAndStreamsHealthChanges) {
  Fixture f(3);
  ASSERT_TRUE(f.plugin->Start().ok());
  auto stub = f.Dial();
  fake::Watch watch(*stub);
  std::map<std::string, std::string> want;
  for (const auto& id : AllDevices(3)) want[id] = "Healthy";
  EXPECT_EQ(watch.List(1, kWait), want);

  // GPU 1 is lost: its three devices go unhealthy in the next list.
  f.Script("gpu 0 uuid GPU-aaa\ngpu 1 uuid GPU-bbb\ngpu 1 error 15\n");
  f.monitor->PollOnce();
  for (int k = 0; k < 3; ++k) want["GPU-bbb::" + std::to_string(k)] = "Unhealthy";
  EXPECT_EQ(watch.List(2, kWait), want);

  // It answers again.
  f.Script("gpu 0 uuid GPU-aaa\ngpu 1 uuid GPU-bbb\n");
  f.monitor->PollOnce();
  for (int k = 0; k < 3; ++k) want["GPU-bbb::" + std::to_string(k)] = "Healthy";
  EXPECT_EQ(watch.List(3, kWait), want);
  f.plugin->Stop();  // ends the open stream
}

TEST(DevicePlugin, XidsFromNvmlsEventApiStreamTheirGpuUnhealthy) {
  Fixture f(2);
  std::string why;
  // The stand-in's event API, as the command opens it: XIDs come from the script.
  auto xids = OpenNvmlXid(TIDAL_NVML_STUB, &why);
  ASSERT_NE(xids, nullptr) << why;
  HealthMonitor monitor(*f.state, f.nvml.get(), std::move(xids), f.log, 60'000);
  ASSERT_TRUE(f.plugin->Start().ok());
  auto stub = f.Dial();
  fake::Watch watch(*stub);
  const std::string gpus = "gpu 0 uuid GPU-aaa\ngpu 1 uuid GPU-bbb\n";
  std::map<std::string, std::string> want;
  for (const auto& id : AllDevices(2)) want[id] = "Healthy";
  ASSERT_EQ(watch.List(1, kWait), want);
  struct Step {
    const char* name;
    std::string script;  // appended to the two GPUs
    std::vector<std::string> unhealthy;
  };
  const Step steps[] = {
      // Events come in the script's order: the list that shows GPU 1 unhealthy
      // was sent after the application's XID on GPU 0 was handled.
      {"an application's XID on GPU 0, then XID 79 on GPU 1",
       "gpu 0 xid 13\ngpu 1 xid 79\n",
       {"GPU-bbb::0", "GPU-bbb::1"}},
      {"an XID naming no GPU hits them all",
       "gpu 0 xid 13\ngpu 1 xid 79\nxid 48\n",
       {"GPU-aaa::0", "GPU-aaa::1", "GPU-bbb::0", "GPU-bbb::1"}},
  };
  std::size_t n = 1;
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    f.Script(gpus + s.script);
    while (monitor.XidOnce(200)) {
    }
    for (const std::string& id : s.unhealthy) want[id] = "Unhealthy";
    EXPECT_EQ(watch.List(++n, kWait), want);
  }
  // Polling finds every GPU answering; an XID holds until the plugin restarts.
  monitor.PollOnce();
  for (const Gpu& g : f.state->Snapshot().gpus) {
    EXPECT_FALSE(g.healthy) << g.uuid;
    EXPECT_EQ(g.why, "XID 48") << g.uuid;
  }
  f.plugin->Stop();
}

TEST(DevicePlugin, AllocationFollowsTheAnnotationElseTheLeastSharedGpu) {
  struct Case {
    const char* name;
    std::string annotation;              // tidal.io/gpus; "" none
    std::vector<std::string> available;  // what the kubelet has free
    std::string preferred, visible, allocated;
  };
  const Case cases[] = {
      {"Tidal chose GPU 1", "1", AllDevices(2), "GPU-bbb::0", "GPU-bbb", "1"},
      {"Tidal chose GPU 0, its second replica free",
       "0",
       {"GPU-aaa::1", "GPU-bbb::0"},
       "GPU-aaa::1",
       "GPU-aaa",
       "0"},
      {"no annotation, all idle: the lowest index", "", AllDevices(2), "GPU-aaa::0", "GPU-aaa",
       "0"},
      {"no annotation, GPU 0 half held: GPU 1",
       "",
       {"GPU-aaa::1", "GPU-bbb::0", "GPU-bbb::1"},
       "GPU-bbb::0",
       "GPU-bbb",
       "1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    f.api.PutPod(NodePodJson("train", 1, c.annotation, "2026-01-01T00:00:00Z"));
    f.api.PutPod(NodePodJson("elsewhere", 1, "0", "2025-01-01T00:00:00Z", "n2"));
    ASSERT_TRUE(f.plugin->Start().ok());
    auto stub = f.Dial();
    std::vector<std::string> preferred;
    ASSERT_TRUE(fake::Prefer(*stub, c.available, 1, &preferred).ok());
    EXPECT_EQ(preferred, std::vector<std::string>{c.preferred});
    v1beta1::ContainerAllocateResponse resp;
    ASSERT_TRUE(fake::Allocate(*stub, preferred, &resp).ok());
    EXPECT_EQ(resp.envs().at("NVIDIA_VISIBLE_DEVICES"), c.visible);
    ASSERT_EQ(resp.cdi_devices_size(), 1);
    EXPECT_EQ(resp.cdi_devices(0).name(), "nvidia.com/gpu=" + c.visible);
    EXPECT_EQ(f.Allocated("train"), c.allocated);
    EXPECT_EQ(f.Allocated("elsewhere"), "");
  }
}

TEST(DevicePlugin, ABadAnnotationIsRefusedWithAnEvent) {
  struct Case {
    const char* name;
    std::string annotation;
    int request;
    std::string reason;
  };
  const Case cases[] = {
      {"a GPU the node does not have", "5", 1, "names GPU 5, which this node does not have"},
      {"more GPUs than requested", "0,1", 1, "names 2 GPUs but the container requests 1 device"},
      {"not a GPU list", "all", 1, "no GPU index at position 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    f.api.PutPod(NodePodJson("bad", c.request, c.annotation, "2026-01-01T00:00:00Z"));
    ASSERT_TRUE(f.plugin->Start().ok());
    auto stub = f.Dial();
    std::vector<std::string> preferred;
    const grpc::Status p = fake::Prefer(*stub, AllDevices(2), c.request, &preferred);
    EXPECT_EQ(p.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    v1beta1::ContainerAllocateResponse resp;
    const grpc::Status a = fake::Allocate(*stub, {"GPU-aaa::0"}, &resp);
    EXPECT_EQ(a.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(a.error_message().find(c.reason), std::string::npos) << a.error_message();
    EXPECT_EQ(resp.envs().count("NVIDIA_VISIBLE_DEVICES"), 0u);  // no GPU given
    EXPECT_EQ(f.Allocated("bad"), "");
    const auto events = f.events->events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0]["type"], "Warning");
    EXPECT_EQ(events[0]["reason"], "TidalGpusRefused");
    EXPECT_EQ(events[0]["involvedObject"]["name"], "bad");
    EXPECT_EQ(events[0]["involvedObject"]["uid"], "uid-bad");
    EXPECT_EQ(events[0]["lastTimestamp"], "2026-01-01T00:00:00Z");
    EXPECT_NE(events[0]["message"].get<std::string>().find(c.reason), std::string::npos);
  }
}

TEST(DevicePlugin, TwoPodsAdmittedAtOnceEachGetTheirOwnGpus) {
  Fixture f;
  f.api.PutPod(NodePodJson("first", 1, "1", "2026-01-01T00:00:01Z"));
  f.api.PutPod(NodePodJson("second", 1, "0", "2026-01-01T00:00:02Z"));
  ASSERT_TRUE(f.plugin->Start().ok());
  auto stub = f.Dial();
  // Both Allocate calls at once, on two connections, with the same devices:
  // the kubelet's choice must not decide which GPUs either pod gets.
  auto one = [&] {
    auto s = f.Dial();
    v1beta1::ContainerAllocateResponse r;
    EXPECT_TRUE(fake::Allocate(*s, {"GPU-aaa::0"}, &r).ok());
    return r.envs().count("NVIDIA_VISIBLE_DEVICES") ? r.envs().at("NVIDIA_VISIBLE_DEVICES") : "";
  };
  auto a = std::async(std::launch::async, one);
  auto b = std::async(std::launch::async, one);
  const std::set<std::string> got{a.get(), b.get()};
  EXPECT_EQ(got, (std::set<std::string>{"GPU-aaa", "GPU-bbb"}));
  EXPECT_EQ(f.Allocated("first"), "1");
  EXPECT_EQ(f.Allocated("second"), "0");
  // A third admission finds nobody left: the kubelet's device, nothing marked.
  v1beta1::ContainerAllocateResponse r;
  ASSERT_TRUE(fake::Allocate(*stub, {"GPU-bbb::1"}, &r).ok());
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-bbb");
}

}  // namespace
}  // namespace tidal::deviceplugin
