#include "tidal/deviceplugin/allocator.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include "tidal/deviceplugin/annotation.h"

namespace tidal::deviceplugin {
namespace {

// Scripted pods; records annotations and events.
class FakePodApi final : public PodApi {
 public:
  Status ListNodePods(std::vector<NodePod>* out) override {
    if (!list_error.empty()) return Status::Error(list_error);
    *out = pods;
    return Status::Ok();
  }
  Status Annotate(const NodePod& pod, const std::string& key, const std::string& value) override {
    for (NodePod& p : pods)
      if (p.uid == pod.uid && key == kAnnotationGpusAllocated) p.allocated = true;
    annotations.push_back(pod.name + " " + key + "=" + value);
    return Status::Ok();
  }
  Status Warn(const NodePod& pod, const std::string& reason, const std::string& message) override {
    events.push_back(pod.name + " " + reason + ": " + message);
    return Status::Ok();
  }
  std::vector<NodePod> pods;
  std::string list_error;
  std::vector<std::string> annotations, events;
};

NodePod Pending(const std::string& name, int request, const std::string& choice,
                const std::string& created) {
  NodePod p;
  p.namespace_name = "ml";
  p.name = name;
  p.uid = "uid-" + name;
  p.node = "n1";
  p.phase = "Pending";
  p.created = p.bound = created;
  p.request = request;
  p.has_choice = !choice.empty();
  p.choice = choice;
  return p;
}

Inventory FourGpus() {
  Inventory inv;
  inv.replicas = 2;
  for (int i = 0; i < 4; ++i) inv.gpus.push_back({i, "GPU-" + std::to_string(i), true, ""});
  return inv;
}

std::shared_ptr<spdlog::logger> NullLog() {
  return std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
}

TEST(Allocator, GivesTheAnnotatedGpusOrRefusesOrFallsBack) {
  struct Case {
    const char* name;
    std::vector<NodePod> pods;
    std::string list_error;
    std::vector<std::string> devices;  // what the kubelet allocated
    bool ok;
    std::vector<std::string> uuids;
    std::vector<std::string> annotations, events;
  };
  const Case cases[] = {
      {"the annotation wins over the kubelet's devices",
       {Pending("p", 2, "3,1", "t1")},
       "",
       {"GPU-0::0", "GPU-1::0"},
       true,
       {"GPU-3", "GPU-1"},
       {"p tidal.io/gpus-allocated=3,1"},
       {}},
      {"no annotation: the kubelet's (least-shared) devices, recorded",
       {Pending("p", 1, "", "t1")},
       "",
       {"GPU-2::1"},
       true,
       {"GPU-2"},
       {"p tidal.io/gpus-allocated=2"},
       {}},
      {"no such pod: the kubelet's devices, nothing recorded",
       {Pending("p", 2, "0,1", "t1")},
       "",
       {"GPU-2::1"},
       true,
       {"GPU-2"},
       {},
       {}},
      {"zero devices: no pod is taken for it",
       {Pending("cpu-only", 0, "", "t1")},
       "",
       {},
       true,
       {},
       {},
       {}},
      {"the API is down: the kubelet's devices",
       {},
       "HTTP 503",
       {"GPU-2::1"},
       true,
       {"GPU-2"},
       {},
       {}},
      {"a GPU the node does not have is refused",
       {Pending("p", 1, "9", "t1")},
       "",
       {"GPU-0::0"},
       false,
       {},
       {},
       {"p TidalGpusRefused: tidal.io/gpus names GPU 9, which this node does not have (GPUs: "
        "0,1,2,3)"}},
      {"more GPUs than requested is refused",
       {Pending("p", 1, "0,1", "t1")},
       "",
       {"GPU-0::0"},
       false,
       {},
       {},
       {"p TidalGpusRefused: tidal.io/gpus names 2 GPUs but the container requests 1 device"}},
      {"a malformed annotation is refused",
       {Pending("p", 1, "zero", "t1")},
       "",
       {"GPU-0::0"},
       false,
       {},
       {},
       {"p TidalGpusRefused: tidal.io/gpus \"zero\": no GPU index at position 0; expected GPU "
        "indices 0-63 separated by commas, e.g. \"0,2\""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakePodApi api;
    api.pods = c.pods;
    api.list_error = c.list_error;
    Allocator alloc(api, NullLog(), {"n1", "", 4096});
    ContainerGrant g;
    const Status s = alloc.Allocate(FourGpus(), c.devices, &g);
    EXPECT_EQ(s.ok(), c.ok) << s.reason();
    EXPECT_EQ(g.uuids, c.uuids);
    EXPECT_EQ(api.annotations, c.annotations);
    EXPECT_EQ(api.events, c.events);
  }
}

TEST(Allocator, ARefusedPodIsNotTakenForTheNext) {
  FakePodApi api;
  api.pods = {Pending("bad", 1, "9", "t1"), Pending("good", 1, "2", "t2")};
  Allocator alloc(api, NullLog(), {"n1", "", 4096});
  ContainerGrant g;
  EXPECT_FALSE(alloc.Allocate(FourGpus(), {"GPU-0::0"}, &g).ok());
  ASSERT_TRUE(alloc.Allocate(FourGpus(), {"GPU-0::0"}, &g).ok());
  EXPECT_EQ(g.pod, "ml/good");
  EXPECT_EQ(g.uuids, std::vector<std::string>{"GPU-2"});
}

TEST(Allocator, SuccessiveAdmissionsTakeSuccessivePods) {
  FakePodApi api;
  // Marking fails on the server: the plugin's own memory still tells them apart.
  api.pods = {Pending("second", 1, "1", "t2"), Pending("first", 1, "0", "t1")};
  Allocator alloc(api, NullLog(), {"n1", "nvidia.com/gpu", 4096});
  ContainerGrant a, b, c;
  ASSERT_TRUE(alloc.Allocate(FourGpus(), {"GPU-3::0"}, &a).ok());
  api.pods[1].allocated = false;  // as if the patch had not landed
  ASSERT_TRUE(alloc.Allocate(FourGpus(), {"GPU-3::1"}, &b).ok());
  ASSERT_TRUE(alloc.Allocate(FourGpus(), {"GPU-2::0"}, &c).ok());
  EXPECT_EQ(a.pod, "ml/first");
  EXPECT_EQ(a.cdi_devices, std::vector<std::string>{"nvidia.com/gpu=GPU-0"});
  EXPECT_EQ(b.pod, "ml/second");
  EXPECT_EQ(b.uuids, std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(c.pod, "");  // nobody left: the kubelet's device
  EXPECT_EQ(c.uuids, std::vector<std::string>{"GPU-2"});
}

TEST(Allocator, PreferAdvisesTheChosenReplicasOrRefuses) {
  FakePodApi api;
  api.pods = {Pending("p", 2, "2,0", "t1")};
  Allocator alloc(api, NullLog(), {"n1", "", 4096});
  std::vector<std::string> all;
  for (const auto& d : ListDevices(FourGpus())) all.push_back(d.id);
  std::vector<std::string> out;
  ASSERT_TRUE(alloc.Prefer(FourGpus(), all, {}, 2, &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"GPU-2::0", "GPU-0::0"}));
  EXPECT_TRUE(api.annotations.empty());  // advice marks nothing
  api.pods = {Pending("p", 1, "2,0", "t1")};
  const Status s = alloc.Prefer(FourGpus(), all, {}, 1, &out);
  EXPECT_EQ(s.code(), Code::kUnresolvable);
}

}  // namespace
}  // namespace tidal::deviceplugin
