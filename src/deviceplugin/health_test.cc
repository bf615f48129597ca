#include "tidal/deviceplugin/health.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <stdlib.h>

#include <deque>
#include <fstream>

#include "testing/process.h"

namespace tidal::deviceplugin {
namespace {

// The stand-in libnvidia-ml.so.1, scripted through a file it re-reads.
class StubNvml {
 public:
  StubNvml() : path_(dir_.path() + "/nvml.script") {
    setenv("TIDAL_NVML_STUB_SCRIPT", path_.c_str(), 1);
  }
  void Script(const std::string& text) { std::ofstream(path_) << text; }
  std::unique_ptr<agent::GpuSource> Open() {
    std::string why;
    auto src = agent::OpenNvml(TIDAL_NVML_STUB, &why);
    EXPECT_NE(src, nullptr) << why;
    return src;
  }

 private:
  testing::TempDir dir_;
  std::string path_;
};

const char* kTwoGpus =
    "gpu 0 uuid GPU-aaa\ngpu 0 memory 100 0 10\n"
    "gpu 1 uuid GPU-bbb\ngpu 1 memory 100 0 10\n";

class ScriptedXids final : public XidSource {
 public:
  bool Wait(int, XidEvent* out) override {
    if (events.empty()) return false;
    *out = events.front();
    events.pop_front();
    return true;
  }
  std::deque<XidEvent> events;
};

std::shared_ptr<spdlog::logger> NullLog() {
  return std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
}

std::vector<bool> Health(const DeviceState& s) {
  std::vector<bool> out;
  for (const Gpu& g : s.Snapshot().gpus) out.push_back(g.healthy);
  return out;
}

TEST(BuildInventory, NamesGpusByNvmlIndexAndUuid) {
  StubNvml nvml;
  struct Case {
    const char* name;
    std::string script;
    bool ok;
    std::vector<std::string> uuids;
    std::string reason;
  };
  const Case cases[] = {
      {"two GPUs", kTwoGpus, true, {"GPU-aaa", "GPU-bbb"}, ""},
      {"a lost GPU has no UUID",
       std::string(kTwoGpus) + "gpu 1 error 15\n",
       false,
       {},
       "GPU 1: no UUID (nvmlDeviceGetUUID: GPU is lost (15))"},
      {"no GPU", "count 0\n", false, {}, "nvml: no GPU"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    nvml.Script(c.script);
    auto src = nvml.Open();
    ASSERT_NE(src, nullptr);
    Inventory inv;
    const Status s = BuildInventory(*src, 3, &inv);
    EXPECT_EQ(s.ok(), c.ok) << s.reason();
    std::vector<std::string> uuids;
    for (const Gpu& g : inv.gpus) uuids.push_back(g.uuid);
    EXPECT_EQ(uuids, c.uuids);
    if (!c.ok) {
      EXPECT_EQ(s.reason(), c.reason);
    } else {
      EXPECT_EQ(inv.replicas, 3);
    }
  }
}

TEST(HealthMonitor, PollingFollowsNvmlAndXidsStick) {
  StubNvml nvml;
  nvml.Script(kTwoGpus);
  auto src = nvml.Open();
  ASSERT_NE(src, nullptr);
  Inventory inv;
  ASSERT_TRUE(BuildInventory(*src, 2, &inv).ok());
  DeviceState state(inv);
  auto xids = std::make_unique<ScriptedXids>();
  ScriptedXids* x = xids.get();
  HealthMonitor mon(state, src.get(), std::move(xids), NullLog(), 1000);
  struct Step {
    const char* name;
    std::string script;  // "" keeps the last
    std::vector<XidEvent> xids;
    std::vector<bool> health;
  };
  const Step steps[] = {
      {"all answer", kTwoGpus, {}, {true, true}},
      {"GPU 1 lost", std::string(kTwoGpus) + "gpu 1 error 15\n", {}, {true, false}},
      {"GPU 1 back", kTwoGpus, {}, {true, true}},
      {"GPU 1 gone from the count", "gpu 0 uuid GPU-aaa\n", {}, {true, false}},
      {"another GPU in slot 1", "gpu 0 uuid GPU-aaa\ngpu 1 uuid GPU-zzz\n", {}, {true, false}},
      {"an application's XID changes nothing", kTwoGpus, {{0, 13}}, {true, true}},
      {"a critical XID", kTwoGpus, {{0, 79}}, {false, true}},
      {"polling does not undo an XID", kTwoGpus, {}, {false, true}},
      {"an XID on no known GPU hits all", kTwoGpus, {{-1, 48}}, {false, false}},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    nvml.Script(s.script);
    for (const XidEvent& e : s.xids) x->events.push_back(e);
    while (mon.XidOnce(0)) {
    }
    mon.PollOnce();
    EXPECT_EQ(Health(state), s.health);
  }
}

TEST(DeviceState, AChangeWakesTheWatchersAndStopEndsThem) {
  Inventory inv;
  inv.gpus = {{0, "GPU-a", true, ""}};
  DeviceState state(inv);
  std::uint64_t v0 = 0, v1 = 0;
  state.Snapshot(&v0);
  state.SetHealth(0, true, "");  // no change: same version
  state.Snapshot(&v1);
  EXPECT_EQ(v0, v1);
  state.SetHealth(0, false, "XID 79");
  EXPECT_TRUE(state.Wait(v0, 10'000));  // returns at once: the version moved
  state.Snapshot(&v1);
  EXPECT_NE(v0, v1);
  state.Stop();
  EXPECT_FALSE(state.Wait(v1, 10'000));
}

TEST(OpenNvmlXid, OpensTheEventApiOrSaysWhyNot) {
  StubNvml nvml;
  struct Case {
    const char* name;
    std::string library;  // "" the stand-in
    std::string script;
    std::string why;  // "" opens
  };
  const Case cases[] = {
      {"the stand-in's event API", "", kTwoGpus, ""},
      {"one GPU without events is left to polling", "", std::string(kTwoGpus) + "gpu 0 no_events\n",
       ""},
      {"no GPU with events", "", std::string(kTwoGpus) + "gpu 0 no_events\ngpu 1 no_events\n",
       "no GPU supports XID events"},
      {"NVML does not start", "", "init_error 9\n", "NVML events could not be set up"},
      // A library without the event calls: health then comes from polling alone.
      {"no event API", "libc.so.6", kTwoGpus, "libc.so.6: no NVML event API"},
      {"no library", "/nonexistent/libnvidia-ml.so.1", kTwoGpus, "cannot load"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    nvml.Script(c.script);
    std::string why;
    auto xids = OpenNvmlXid(c.library.empty() ? TIDAL_NVML_STUB : c.library, &why);
    EXPECT_EQ(xids == nullptr, !c.why.empty()) << why;
    if (!c.why.empty()) {
      EXPECT_NE(why.find(c.why), std::string::npos) << why;
    }
  }
}

TEST(OpenNvmlXid, HandsOutEachScriptedXidOnceInOrder) {
  StubNvml nvml;
  // GPU 0 cannot register for events: its XIDs never arrive, as with NVML.
  const std::string gpus = std::string(kTwoGpus) + "gpu 0 no_events\n";
  nvml.Script(gpus);
  std::string why;
  auto xids = OpenNvmlXid(TIDAL_NVML_STUB, &why);
  ASSERT_NE(xids, nullptr) << why;
  struct Step {
    const char* name;
    std::string script;                                 // appended to the GPUs
    std::vector<std::pair<int, std::uint64_t>> events;  // (GPU, XID) until a timeout
  };
  const Step steps[] = {
      {"none yet", "", {}},
      {"two on GPU 1 and one naming no GPU",
       "gpu 1 xid 79\nxid 48\ngpu 1 xid 13\n",
       {{1, 79}, {-1, 48}, {1, 13}}},
      {"the same lines again are not new events", "gpu 1 xid 79\nxid 48\ngpu 1 xid 13\n", {}},
      {"an appended line is; one of GPU 0 is not delivered",
       "gpu 1 xid 79\nxid 48\ngpu 1 xid 13\ngpu 0 xid 79\ngpu 1 xid 94\n",
       {{1, 94}}},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    nvml.Script(gpus + s.script);
    std::vector<std::pair<int, std::uint64_t>> got;
    XidEvent e;
    while (xids->Wait(50, &e)) got.emplace_back(e.gpu, e.xid);
    EXPECT_EQ(got, s.events);
  }
}

TEST(IsApplicationXid, SkipsOnlyTheApplicationsErrors) {
  for (std::uint64_t xid : {13, 31, 43, 45, 68, 109}) EXPECT_TRUE(IsApplicationXid(xid)) << xid;
  for (std::uint64_t xid : {48, 62, 63, 64, 74, 79, 94, 95})
    EXPECT_FALSE(IsApplicationXid(xid)) << xid;
}

}  // namespace
}  // namespace tidal::deviceplugin
