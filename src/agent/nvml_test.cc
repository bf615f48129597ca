// The NVML path end to end: dlopen of the stand-in libnvidia-ml.so.1, scripted
// values and errors, and the GPU collector's series.
#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/agent_test_util.h"
#include "tidal/agent/gpu.h"

namespace tidal::agent {
namespace {

using testing::Count;
using testing::Find;

constexpr const char* kTwoLinkedGpus =
    "gpu 0 uuid GPU-aaaa\n"
    "gpu 0 name NVIDIA H100 80GB HBM3\n"
    "gpu 0 bus 00000000:18:00.0\n"
    "gpu 0 memory 85899345920 536870912 21474836480\n"
    "gpu 0 link 0 00000000:19:00.0\n"
    "gpu 0 link 1 0000:19:00.0\n"
    "gpu 0 speed 25000\n"
    "gpu 0 procs 3\n"
    "gpu 1 uuid GPU-bbbb\n"
    "gpu 1 name NVIDIA H100 80GB HBM3\n"
    "gpu 1 bus 00000000:19:00.0\n"
    "gpu 1 memory 85899345920 536870912 42949672960\n"
    "gpu 1 link 0 00000000:18:00.0\n"
    "gpu 1 link 1 00000000:18:00.0\n"
    "gpu 1 speed 25000\n";

// Scripts the stub, loads it, and collects passes.
class NvmlStubTest : public ::testing::Test {
 protected:
  void Script(const std::string& text) {
    path_ = dir_.Write("nvml.script", text);
    setenv("TIDAL_NVML_STUB_SCRIPT", path_.c_str(), 1);
  }
  std::unique_ptr<GpuCollector> Open() {
    std::string why;
    auto src = OpenNvml(TIDAL_NVML_STUB, &why);
    EXPECT_NE(src, nullptr) << why;
    return std::make_unique<GpuCollector>(std::move(src), "");
  }
  testing::TempDir dir_;
  std::string path_;
};

TEST_F(NvmlStubTest, MemoryUsesTheV2CallAndLabelsEveryGpu) {
  Script(kTwoLinkedGpus);
  auto c = Open();
  MetricSet s("n1");
  ASSERT_TRUE(c->Collect(s).ok());
  const LabelPairs gpu0{
      {"node", "n1"}, {"gpu_id", "0"}, {"uuid", "GPU-aaaa"}, {"model", "NVIDIA H100 80GB HBM3"}};
  EXPECT_EQ(Find(s, "ai_gpu_memory_used_bytes", gpu0), 21474836480.0);
  EXPECT_EQ(Find(s, "ai_gpu_memory_total_bytes", gpu0), 85899345920.0);
  EXPECT_EQ(Find(s, "ai_gpu_memory_reserved_bytes", gpu0), 536870912.0);
  EXPECT_DOUBLE_EQ(*Find(s, "ai_gpu_memory_utilization", gpu0), 0.25);
  EXPECT_DOUBLE_EQ(*Find(s, "ai_gpu_memory_utilization", {{"gpu_id", "1"}}), 0.5);
  EXPECT_EQ(Find(s, "ai_gpu_compute_processes", {{"gpu_id", "0"}}), 3.0);
  EXPECT_EQ(c->gpu_count(), 2);
}

TEST_F(NvmlStubTest, V1MemoryWhenV2IsNotSupported) {
  Script(std::string(kTwoLinkedGpus) + "gpu 0 no_memory_v2\n");
  auto c = Open();
  MetricSet s("n1");
  ASSERT_TRUE(c->Collect(s).ok());
  // v1 counts reserved memory as used.
  EXPECT_EQ(Find(s, "ai_gpu_memory_used_bytes", {{"gpu_id", "0"}}), 21474836480.0 + 536870912.0);
  EXPECT_FALSE(Find(s, "ai_gpu_memory_reserved_bytes", {{"gpu_id", "0"}}));
}

TEST_F(NvmlStubTest, DirectLinksArePeersWithCountsAcrossBusIdForms) {
  Script(kTwoLinkedGpus);
  auto c = Open();
  MetricSet s("n1");
  ASSERT_TRUE(c->Collect(s).ok());
  EXPECT_EQ(Find(s, "ai_gpu_nvlink_peer_links", {{"gpu_id", "0"}, {"peer_gpu_id", "1"}}), 2.0);
  EXPECT_EQ(Find(s, "ai_gpu_nvlink_peer_links", {{"gpu_id", "1"}, {"peer_gpu_id", "0"}}), 2.0);
}

TEST_F(NvmlStubTest, NvswitchConnectsEveryPairWithTheGpusLinkCount) {
  std::string script;
  for (int g = 0; g < 4; ++g) {
    script += "gpu " + std::to_string(g) + " uuid GPU-" + std::to_string(g) + "\n";
    script += "gpu " + std::to_string(g) + " bus 00000000:1" + std::to_string(g) + ":00.0\n";
    script += "gpu " + std::to_string(g) + " memory 100 0 10\n";
    for (int l = 0; l < 18; ++l)
      script += "gpu " + std::to_string(g) + " link " + std::to_string(l) + " switch\n";
  }
  Script(script);
  auto c = Open();
  MetricSet s("n1");
  ASSERT_TRUE(c->Collect(s).ok());
  EXPECT_EQ(Count(s, "ai_gpu_nvlink_peer_links"), 12u);
  EXPECT_EQ(Find(s, "ai_gpu_nvlink_peer_links", {{"gpu_id", "3"}, {"peer_gpu_id", "0"}}), 18.0);
  EXPECT_EQ(Find(s, "ai_gpu_nvlink_active_links", {{"gpu_id", "2"}}), 18.0);
}

struct UtilCase {
  const char* name;
  std::string counters0, counters1;  // "tx rx timestamp_us" for GPU 0 in two passes
  bool ok;
  double util;  // expected for GPU 0 when ok
  const char* reason_part;
};

class NvlinkUtilCases : public NvmlStubTest, public ::testing::WithParamInterface<UtilCase> {};

TEST_P(NvlinkUtilCases, FromThroughputCountersOverTheInterval) {
  const UtilCase& tc = GetParam();
  Script(std::string(kTwoLinkedGpus) + "gpu 0 counters " + tc.counters0 + "\n");
  auto c = Open();
  MetricSet first("n1");
  ASSERT_TRUE(c->Collect(first).ok());
  EXPECT_FALSE(Find(first, "ai_nvlink_bandwidth_utilization")) << "a rate needs two samples";
  Script(std::string(kTwoLinkedGpus) + "gpu 0 counters " + tc.counters1 + "\n");
  MetricSet second("n1");
  const Status st = c->Collect(second);
  EXPECT_EQ(st.ok(), tc.ok) << st.reason();
  if (tc.ok) {
    ASSERT_TRUE(Find(second, "ai_nvlink_bandwidth_utilization", {{"gpu_id", "0"}}));
    EXPECT_NEAR(*Find(second, "ai_nvlink_bandwidth_utilization", {{"gpu_id", "0"}}), tc.util, 1e-9);
  } else {
    EXPECT_FALSE(Find(second, "ai_nvlink_bandwidth_utilization", {{"gpu_id", "0"}}));
    EXPECT_NE(st.reason().find(tc.reason_part), std::string::npos) << st.reason();
    // Memory is still served while the NVLink rate is not.
    EXPECT_TRUE(Find(second, "ai_gpu_memory_used_bytes", {{"gpu_id", "0"}}));
  }
}

// 2 links × 25 GB/s = 50e9 B/s; 1 s apart.
INSTANTIATE_TEST_SUITE_P(
    Cases, NvlinkUtilCases,
    ::testing::Values(
        UtilCase{"Idle_links_are_zero", "1000 1000 1000000", "1000 1000 2000000", true, 0, ""},
        UtilCase{"Busier_direction_counts", "0 0 1000000", "24414062 12207031 2000000", true,
                 24414062.0 * 1024 / 50e9, ""},
        UtilCase{"Half_a_second_doubles_the_rate", "0 0 1000000", "12207031 0 1500000", true,
                 12207031.0 * 1024 * 2 / 50e9, ""},
        UtilCase{"Overfull_is_clamped_to_one", "0 0 1000000", "99999999 0 2000000", true, 1, ""},
        UtilCase{"Counters_going_backwards_mark_down", "5000 5000 1000000", "10 10 2000000", false,
                 0, "went backwards"},
        UtilCase{"Stale_timestamp_marks_down", "0 0 1000000", "10 10 1000000", false, 0,
                 "timestamp"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(NvmlStubTest, LostGpuIsMarkedDownWhileTheOtherIsServed) {
  Script(std::string(kTwoLinkedGpus) + "gpu 1 error 15\n");
  auto c = Open();
  MetricSet s("n1");
  const Status st = c->Collect(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("GPU 1"), std::string::npos) << st.reason();
  EXPECT_NE(st.reason().find("GPU is lost"), std::string::npos) << st.reason();
  EXPECT_TRUE(Find(s, "ai_gpu_memory_used_bytes", {{"gpu_id", "0"}}));
  EXPECT_FALSE(Find(s, "ai_gpu_memory_used_bytes", {{"gpu_id", "1"}}));
  EXPECT_EQ(c->gpu_count(), 1);
}

TEST_F(NvmlStubTest, NvlinkNotSupportedLeavesNvlinkSeriesOutWithoutAnError) {
  Script(std::string(kTwoLinkedGpus) + "gpu 0 link_error 3\ngpu 1 link_error 3\n");
  auto c = Open();
  MetricSet s("n1");
  const Status st = c->Collect(s);
  EXPECT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(Count(s, "ai_gpu_nvlink_peer_links"), 0u);
  EXPECT_EQ(Count(s, "ai_nvlink_bandwidth_utilization"), 0u);
  EXPECT_EQ(Count(s, "ai_gpu_memory_used_bytes"), 2u);
}

TEST_F(NvmlStubTest, UnknownErrorMidRunMarksDownAndRecovers) {
  Script(kTwoLinkedGpus);
  auto c = Open();
  MetricSet ok1("n1");
  ASSERT_TRUE(c->Collect(ok1).ok());
  Script(std::string(kTwoLinkedGpus) + "count_error 999\n");
  MetricSet bad("n1");
  const Status st = c->Collect(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("Unknown Error"), std::string::npos) << st.reason();
  EXPECT_EQ(Count(bad, "ai_gpu_memory_used_bytes"), 0u);
  Script(kTwoLinkedGpus);
  MetricSet ok2("n1");
  EXPECT_TRUE(c->Collect(ok2).ok());
  EXPECT_EQ(Count(ok2, "ai_gpu_memory_used_bytes"), 2u);
}

TEST_F(NvmlStubTest, GpuVanishingBetweenPassesIsNotACrash) {
  Script(kTwoLinkedGpus);
  auto c = Open();
  MetricSet a("n1");
  ASSERT_TRUE(c->Collect(a).ok());
  Script("count 2\ngpu 0 uuid GPU-aaaa\ngpu 0 memory 100 0 50\n");  // GPU 1 gone from the bus
  MetricSet b("n1");
  const Status st = c->Collect(b);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(Count(b, "ai_gpu_memory_used_bytes"), 1u);
}

TEST_F(NvmlStubTest, FieldValuesErrorMarksTheGpuDown) {
  Script(std::string(kTwoLinkedGpus) + "gpu 0 field_error 999\n");
  auto c = Open();
  MetricSet s("n1");
  const Status st = c->Collect(s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("nvmlDeviceGetFieldValues"), std::string::npos) << st.reason();
}

TEST_F(NvmlStubTest, InitFailureReturnsNullWithTheReason) {
  Script("init_error 9\n");
  std::string why;
  EXPECT_EQ(OpenNvml(TIDAL_NVML_STUB, &why), nullptr);
  EXPECT_NE(why.find("Driver Not Loaded"), std::string::npos) << why;
}

TEST(OpenNvml, MissingLibraryReturnsNullWithTheReason) {
  std::string why;
  EXPECT_EQ(OpenNvml("/nonexistent/libnvidia-ml.so.1", &why), nullptr);
  EXPECT_NE(why.find("cannot load"), std::string::npos) << why;
}

TEST(OpenNvml, ALibraryWithoutNvmlSymbolsIsRejected) {
  std::string why;
  EXPECT_EQ(OpenNvml("libm.so.6", &why), nullptr);
  EXPECT_NE(why.find("not an NVML library"), std::string::npos) << why;
}

TEST(GpuCollector, WithoutAnySourceReportsDownWithTheReason) {
  GpuCollector c(nullptr, "NVML unavailable and no nvidia-smi");
  MetricSet s("n1");
  const Status st = c.Collect(s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "NVML unavailable and no nvidia-smi");
  EXPECT_FALSE(c.gpu_count());
}

}  // namespace
}  // namespace tidal::agent
