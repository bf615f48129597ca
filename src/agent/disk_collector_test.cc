#include "tidal/agent/disk_collector.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/agent_test_util.h"

namespace tidal::agent {
namespace {

using testing::Count;
using testing::Find;

// An in-memory /proc: tests change files between passes.
struct FakeProc {
  std::map<std::string, std::string> files;
  FileReader Reader() {
    return [this](const std::string& path, std::string* out) {
      const auto it = files.find(path);
      if (it == files.end()) return Status::Error(path + ": cannot open");
      *out = it->second;
      return Status();
    };
  }
};

std::string Sample(const std::string& file) {
  const std::string t =
      testing::ReadFile(std::string(TIDAL_TESTDATA_DIR) + "/reference/procfs/" + file);
  return t.substr(t.find('\n') + 1);  // drop the /proc/uptime line
}

constexpr const char* kLoop = "   7       0 loop0 5 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

class DiskCollectorTest : public ::testing::Test {
 protected:
  DiskCollectorTest() : c_(DiskOptions{}, proc_.Reader(), clock_) {}
  Status Pass(const std::string& diskstats, MetricSet* out, std::int64_t after_ms = 330) {
    proc_.files["/proc/diskstats"] = diskstats;
    clock_.AdvanceMs(after_ms);
    return c_.Collect(*out);
  }
  FakeProc proc_;
  ManualMonotonicClock clock_;
  DiskCollector c_;
};

TEST_F(DiskCollectorTest, FirstPassHasNoRatesSecondMatchesIostat) {
  MetricSet a("n1");
  ASSERT_TRUE(Pass(Sample("diskstats_vda_t0.txt") + kLoop, &a).ok());
  EXPECT_EQ(Count(a, "ai_storage_await_seconds"), 0u);
  MetricSet b("n1");
  const Status st = Pass(Sample("diskstats_vda_t1.txt") + kLoop, &b);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_NEAR(*Find(b, "ai_storage_await_seconds", {{"device", "vda"}}), 233.0 / 401 / 1000, 1e-12);
  EXPECT_NEAR(*Find(b, "ai_storage_read_await_seconds", {{"device", "vda"}}), 171.0 / 201 / 1000,
              1e-12);
  EXPECT_NEAR(*Find(b, "ai_storage_write_await_seconds", {{"device", "vda"}}), 0.31 / 1000, 1e-12);
  EXPECT_NEAR(*Find(b, "ai_storage_util_ratio", {{"device", "vda"}}), 228.0 / 330, 1e-9);
  EXPECT_NEAR(*Find(b, "ai_storage_queue_size", {{"device", "vda"}}), 233.0 / 330, 1e-9);
  EXPECT_NEAR(*Find(b, "ai_storage_io_load"), 233.0 / 401 / 30, 1e-9);
  EXPECT_FALSE(Find(b, "ai_storage_await_seconds", {{"device", "loop0"}}))
      << "loop devices are skipped";
}

TEST_F(DiskCollectorTest, IoLoadSaturatesAtOne) {
  MetricSet a("n1"), b("n1");
  ASSERT_TRUE(Pass(" 8 0 sda 0 0 0 0 0 0 0 0 0 0 0\n", &a).ok());
  // 10 reads taking 428.3 ms in total → await 42.83 ms → 1.43 → 1 (docs/design.md#storage).
  ASSERT_TRUE(Pass(" 8 0 sda 10 0 80 428 0 0 0 0 0 100 428\n", &b, 1000).ok());
  EXPECT_NEAR(*Find(b, "ai_storage_await_seconds", {{"device", "sda"}}), 0.0428, 1e-12);
  EXPECT_EQ(Find(b, "ai_storage_io_load"), 1.0);
}

struct FaultCase {
  const char* name;
  std::string t0, t1;
  const char* reason_part;
  std::size_t devices_served;  // ai_storage_await_seconds samples in the second pass
};

class DiskFaults : public DiskCollectorTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(DiskFaults, KeepServingAndSayWhy) {
  const FaultCase& tc = GetParam();
  MetricSet a("n1"), b("n1");
  Pass(tc.t0, &a);
  const Status st = Pass(tc.t1, &b);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find(tc.reason_part), std::string::npos) << st.reason();
  EXPECT_EQ(Count(b, "ai_storage_await_seconds"), tc.devices_served);
}

constexpr const char* kSda0 = " 8 0 sda 10 0 80 50 10 0 80 50 0 100 100\n";
constexpr const char* kSda1 = " 8 0 sda 20 0 160 100 20 0 160 100 0 200 200\n";
constexpr const char* kSdb0 = " 8 16 sdb 10 0 80 50 10 0 80 50 0 100 100\n";
constexpr const char* kSdb1 = " 8 16 sdb 20 0 160 100 20 0 160 100 0 200 200\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, DiskFaults,
    ::testing::Values(
        FaultCase{"Device_vanishing_between_samples", std::string(kSda0) + kSdb0, kSda1,
                  "sdb: device vanished", 1},
        FaultCase{"Counters_going_backwards", std::string(kSda0) + kSdb0,
                  std::string(kSda1) + " 8 16 sdb 1 0 8 5 1 0 8 5 0 10 10\n", "sdb: counter", 1},
        FaultCase{"Malformed_line", std::string(kSda0) + kSdb0,
                  std::string(kSda1) + " 8 16 sdb 20 0 16x0\n" + kSdb1, "line 2", 2},
        FaultCase{"Whole_file_garbage", kSda0, "\x01\x02 not diskstats\n", "line 1", 0},
        FaultCase{"Empty_file", kSda0, "", "/proc/diskstats: no block devices", 0},
        FaultCase{"Blank_lines_only", kSda0, "\n\n", "no block devices", 0}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(DiskCollectorTest, MissingDiskstatsIsDown) {
  MetricSet a("n1");
  const Status st = c_.Collect(a);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("/proc/diskstats"), std::string::npos);
}

TEST_F(DiskCollectorTest, DeviceAppearingGetsRatesFromTheNextPass) {
  MetricSet a("n1"), b("n1"), c("n1");
  ASSERT_TRUE(Pass(kSda0, &a).ok());
  ASSERT_TRUE(Pass(std::string(kSda1) + kSdb0, &b).ok());
  EXPECT_EQ(Count(b, "ai_storage_await_seconds"), 1u);
  ASSERT_TRUE(Pass(std::string(kSda1) + kSdb1, &c).ok());
  EXPECT_EQ(Count(c, "ai_storage_await_seconds"), 2u);
}

// A disk pulled between two samples and put back (its counters start again from
// zero): down while it is gone, never "counters going backwards" when it returns,
// rates again from the pass after.
TEST_F(DiskCollectorTest, DiskRemovedBetweenSamplesThenBackRecovers) {
  MetricSet a("n1"), gone("n1"), back("n1"), next("n1");
  ASSERT_TRUE(Pass(std::string(kSda0) + kSdb1, &a).ok());
  const Status st = Pass(kSda1, &gone);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("sdb: device vanished"), std::string::npos) << st.reason();
  EXPECT_EQ(Count(gone, "ai_storage_await_seconds"), 1u) << "the other disk is still served";
  const Status returned = Pass(std::string(kSda1) + kSdb0, &back);
  EXPECT_TRUE(returned.ok()) << returned.reason();
  EXPECT_FALSE(Find(back, "ai_storage_await_seconds", {{"device", "sdb"}}));
  ASSERT_TRUE(Pass(std::string(kSda1) + kSdb1, &next).ok());
  EXPECT_TRUE(Find(next, "ai_storage_await_seconds", {{"device", "sdb"}}));
}

// The disk under a --mount path removed between samples (the mount table still
// names it): down with the device named, and up again when it is back.
TEST(DiskCollectorMounts, TheMountsDiskRemovedBetweenSamplesIsDownThenRecovers) {
  FakeProc proc;
  ManualMonotonicClock clock;
  DiskOptions o;
  o.mounts = {"/data"};
  proc.files["/proc/self/mountinfo"] = "40 1 8:16 / /data rw - xfs /dev/sdb rw\n";
  DiskCollector c(o, proc.Reader(), clock);
  struct Step {
    const char* name;
    std::string diskstats;
    const char* reason_part;  // "" when up
    std::size_t served;
  };
  const Step steps[] = {
      {"first sample", std::string(kSda0) + kSdb0, "", 0},
      {"disk removed", kSda1, "device 8:16 of a --mount path is not in diskstats", 0},
      {"disk back", std::string(kSda1) + kSdb0, "", 0},
      {"rates again", std::string(kSda1) + kSdb1, "", 1},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    proc.files["/proc/diskstats"] = s.diskstats;
    clock.AdvanceMs(1000);
    MetricSet m("n1");
    const Status st = c.Collect(m);
    if (*s.reason_part) {
      ASSERT_FALSE(st.ok());
      EXPECT_NE(st.reason().find(s.reason_part), std::string::npos) << st.reason();
    } else {
      EXPECT_TRUE(st.ok()) << st.reason();
    }
    EXPECT_EQ(Count(m, "ai_storage_await_seconds"), s.served);
  }
}

TEST(DiskCollectorMounts, WatchesOnlyTheDevicesUnderTheMounts) {
  FakeProc proc;
  ManualMonotonicClock clock;
  DiskOptions o;
  o.procfs = "/host/proc";
  o.mounts = {"/data/models"};
  proc.files["/host/proc/1/mountinfo"] =
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n40 27 8:17 / /data rw - xfs /dev/sdb1 rw\n";
  DiskCollector c(o, proc.Reader(), clock);
  const std::string t0 = std::string(" 254 0 vda 1 0 8 1 0 0 0 0 0 1 1\n") +
                         " 8 17 sdb1 10 0 80 50 10 0 80 50 0 100 100\n";
  const std::string t1 = std::string(" 254 0 vda 9 0 80 9 0 0 0 0 0 9 9\n") +
                         " 8 17 sdb1 20 0 160 100 20 0 160 100 0 200 200\n";
  MetricSet a("n1"), b("n1");
  proc.files["/host/proc/diskstats"] = t0;
  ASSERT_TRUE(c.Collect(a).ok());
  clock.AdvanceMs(1000);
  proc.files["/host/proc/diskstats"] = t1;
  const Status st = c.Collect(b);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(Count(b, "ai_storage_await_seconds"), 1u);
  EXPECT_NEAR(*Find(b, "ai_storage_await_seconds", {{"device", "sdb1"}}), 0.005, 1e-12);
}

TEST(DiskCollectorMounts, MountOnANetworkFilesystemSaysWhy) {
  FakeProc proc;
  ManualMonotonicClock clock;
  DiskOptions o;
  o.mounts = {"/nfs"};
  proc.files["/proc/self/mountinfo"] = "50 1 0:55 / /nfs rw - nfs4 srv:/x rw\n";
  proc.files["/proc/diskstats"] = " 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n";
  DiskCollector c(o, proc.Reader(), clock);
  MetricSet a("n1");
  const Status st = c.Collect(a);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("0:55"), std::string::npos) << st.reason();
}

}  // namespace
}  // namespace tidal::agent
