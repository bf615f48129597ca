#include "tidal/agent/diskstats.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tidal::agent {
namespace {

std::string ReadTestdata(const std::string& rel) {
  std::ifstream in(std::string(TIDAL_TESTDATA_DIR) + "/" + rel);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The reference samples carry the /proc/uptime line first; diskstats follows.
std::string DiskstatsPart(const std::string& sample) {
  return sample.substr(sample.find('\n') + 1);
}

TEST(ParseDiskstats, ReferenceSampleHas17FieldsAndNoErrors) {
  std::vector<DiskCounters> d;
  ASSERT_TRUE(
      ParseDiskstats(DiskstatsPart(ReadTestdata("reference/procfs/diskstats_vda_t0.txt")), &d)
          .ok());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "vda");
  EXPECT_EQ(d[0].major, 254u);
  EXPECT_EQ(d[0].fields, 17);
  EXPECT_EQ(d[0].f[0], 100011u);
  EXPECT_EQ(d[0].f[16], 69u);
}

TEST(ComputeIoStats, ReferenceSamplesMatchTheWorkedExample) {
  std::vector<DiskCounters> a, b;
  ASSERT_TRUE(
      ParseDiskstats(DiskstatsPart(ReadTestdata("reference/procfs/diskstats_vda_t0.txt")), &a)
          .ok());
  ASSERT_TRUE(
      ParseDiskstats(DiskstatsPart(ReadTestdata("reference/procfs/diskstats_vda_t1.txt")), &b)
          .ok());
  IoStats s;
  ASSERT_TRUE(ComputeIoStats(a[0], b[0], 330, &s).ok());
  EXPECT_NEAR(s.r_per_s, 609.09, 0.01);
  EXPECT_NEAR(s.rkb_per_s, 620618.2, 0.1);
  EXPECT_NEAR(s.r_await_ms, 171.0 / 201, 1e-9);
  EXPECT_NEAR(s.w_await_ms, 0.31, 1e-9);
  EXPECT_NEAR(s.await_ms, 233.0 / 401, 1e-9);
  EXPECT_NEAR(s.aqu_sz, 233.0 / 330, 1e-9);
  EXPECT_NEAR(s.util_pct, 69.09, 0.01);
}

struct ParseCase {
  const char* name;
  const char* text;
  std::size_t devices;     // well-formed lines kept
  const char* error_part;  // "" when the parse must succeed
};

class ParseDiskstatsCases : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseDiskstatsCases, KeepsGoodLinesAndNamesTheBadOne) {
  const ParseCase& tc = GetParam();
  std::vector<DiskCounters> d;
  const Status st = ParseDiskstats(tc.text, &d);
  EXPECT_EQ(d.size(), tc.devices);
  if (std::string(tc.error_part).empty()) {
    EXPECT_TRUE(st.ok()) << st.reason();
  } else {
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.reason().find(tc.error_part), std::string::npos) << st.reason();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseDiskstatsCases,
    ::testing::Values(
        ParseCase{"Kernel_5_5_has_17_fields",
                  " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", 1, ""},
        ParseCase{"Kernel_4_18_has_15_fields", " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n", 1,
                  ""},
        ParseCase{"Old_kernel_has_11_fields", " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", 1, ""},
        ParseCase{"Ancient_partition_has_4_fields", " 8 1 sda1 1 2 3 4\n", 1, ""},
        ParseCase{"Blank_lines_are_ignored", "\n\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n\n", 1, ""},
        ParseCase{"No_trailing_newline", " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11", 1, ""},
        ParseCase{"Truncated_line_names_line_2",
                  " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n 8 16 sdb 1 2 3\n", 1, "line 2"},
        ParseCase{"Non_numeric_field_names_the_field", " 8 0 sda 1 2 x 4 5 6 7 8 9 10 11\n", 0,
                  "field 3 (sectors read)"},
        ParseCase{"Negative_number_is_malformed", " 8 0 sda -1 2 3 4 5 6 7 8 9 10 11\n", 0,
                  "field 1"},
        ParseCase{"Bad_major", " x 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", 0, "major"},
        ParseCase{"Overflowing_counter", " 8 0 sda 99999999999999999999999 2 3 4 5 6 7 8 9 10 11\n",
                  0, "field 1"},
        ParseCase{"Good_line_after_bad_is_kept", "garbage\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", 1,
                  "line 1 \"garbage\""}),
    [](const auto& p) { return std::string(p.param.name); });

DiskCounters Counters(std::initializer_list<std::uint64_t> f) {
  DiskCounters d;
  d.name = "sda";
  d.fields = 17;
  std::size_t i = 0;
  for (auto v : f) d.f[i++] = v;
  return d;
}

struct IoCase {
  const char* name;
  DiskCounters prev, cur;
  double interval_ms;
  bool ok;
  double await_ms, r_await_ms, w_await_ms, util_pct, aqu_sz;
};

class ComputeIoStatsCases : public ::testing::TestWithParam<IoCase> {};

TEST_P(ComputeIoStatsCases, FollowsSysstat) {
  const IoCase& tc = GetParam();
  IoStats s;
  const Status st = ComputeIoStats(tc.prev, tc.cur, tc.interval_ms, &s);
  ASSERT_EQ(st.ok(), tc.ok) << st.reason();
  if (!tc.ok) return;
  EXPECT_NEAR(s.await_ms, tc.await_ms, 1e-9);
  EXPECT_NEAR(s.r_await_ms, tc.r_await_ms, 1e-9);
  EXPECT_NEAR(s.w_await_ms, tc.w_await_ms, 1e-9);
  EXPECT_NEAR(s.util_pct, tc.util_pct, 1e-9);
  EXPECT_NEAR(s.aqu_sz, tc.aqu_sz, 1e-9);
}

constexpr std::uint64_t k2p32 = std::uint64_t{1} << 32;

INSTANTIATE_TEST_SUITE_P(
    Cases, ComputeIoStatsCases,
    ::testing::Values(
        IoCase{"Idle_device_is_all_zero", Counters({5, 0, 0, 7}), Counters({5, 0, 0, 7}), 1000,
               true, 0, 0, 0, 0, 0},
        IoCase{"Reads_and_writes_combine_into_await", Counters({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
               Counters({10, 0, 80, 100, 30, 0, 240, 500, 2, 400, 900}), 1000, true, 600.0 / 40, 10,
               500.0 / 30, 40, 0.9},
        IoCase{"Discards_count_in_await", Counters({0}),
               Counters({10, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 300}), 1000, true,
               400.0 / 20, 10, 0, 0, 0},
        IoCase{"Flushes_do_not_count_in_await", Counters({0}),
               Counters({10, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 999}), 1000, true, 10,
               10, 0, 0, 0},
        IoCase{"In_flight_going_down_is_not_a_reset", Counters({0, 0, 0, 0, 0, 0, 0, 0, 9}),
               Counters({0, 0, 0, 0, 0, 0, 0, 0, 1}), 1000, true, 0, 0, 0, 0, 0},
        IoCase{"Util_is_capped_at_100", Counters({0}), Counters({0, 0, 0, 0, 0, 0, 0, 0, 0, 1010}),
               1000, true, 0, 0, 0, 100, 0},
        IoCase{"Time_counter_wrapping_at_32_bits_is_unwrapped", Counters({10, 0, 0, k2p32 - 50}),
               Counters({20, 0, 0, 50}), 1000, true, 10, 10, 0, 0, 0},
        IoCase{"Counter_going_backwards_is_a_reset", Counters({k2p32 + 100}), Counters({5}), 1000,
               false, 0, 0, 0, 0, 0},
        IoCase{"Implausible_32_bit_drop_is_a_reset", Counters({1'000'000'000}), Counters({5}), 1000,
               false, 0, 0, 0, 0, 0},
        IoCase{"Zero_interval_is_an_error", Counters({0}), Counters({1}), 0, false, 0, 0, 0, 0, 0}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ComputeIoStats, ResetNamesDeviceAndField) {
  IoStats s;
  const Status st = ComputeIoStats(Counters({0, 0, k2p32 * 4}), Counters({0, 0, 1}), 1000, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("sda"), std::string::npos);
  EXPECT_NE(st.reason().find("sectors read"), std::string::npos);
}

struct DeviceCase {
  const char* name;
  bool include_dm;
  bool expected;
};

class DefaultDeviceCases : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(DefaultDeviceCases, PicksWholeRealDisks) {
  EXPECT_EQ(IsDefaultDevice(GetParam().name, GetParam().include_dm), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DefaultDeviceCases,
    ::testing::Values(DeviceCase{"sda", false, true}, DeviceCase{"sda1", false, false},
                      DeviceCase{"vda", false, true}, DeviceCase{"xvdb3", false, false},
                      DeviceCase{"nvme0n1", false, true}, DeviceCase{"nvme0n1p2", false, false},
                      DeviceCase{"mmcblk0", false, true}, DeviceCase{"mmcblk0p1", false, false},
                      DeviceCase{"md0", false, true}, DeviceCase{"loop0", false, false},
                      DeviceCase{"ram1", false, false}, DeviceCase{"zram0", false, false},
                      DeviceCase{"sr0", false, false}, DeviceCase{"dm-0", false, false},
                      DeviceCase{"dm-0", true, true}),
    [](const auto& p) {
      std::string n = p.param.name;
      for (char& c : n)
        if (c == '-') c = '_';
      return n + (p.param.include_dm ? "_with_dm" : "");
    });

constexpr const char* kMountinfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "40 27 8:17 / /data rw,relatime - xfs /dev/sdb1 rw\n"
    "41 40 8:33 / /data/fast rw,relatime - xfs /dev/sdc1 rw\n"
    "42 27 8:49 / /my\\040disk rw - xfs /dev/sdd1 rw\n";

struct MountCase {
  const char* name;
  std::vector<std::string> paths;
  std::vector<std::pair<unsigned, unsigned>> expected;
};

class MountDevicesCases : public ::testing::TestWithParam<MountCase> {};

TEST_P(MountDevicesCases, LongestPrefixWins) {
  std::vector<std::pair<unsigned, unsigned>> got;
  ASSERT_TRUE(MountDevices(kMountinfo, GetParam().paths, &got).ok());
  EXPECT_EQ(got, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MountDevicesCases,
    ::testing::Values(MountCase{"Root", {"/"}, {{254, 0}}},
                      MountCase{"Path_inside_a_mount", {"/data/models/x"}, {{8, 17}}},
                      MountCase{"Nested_mount", {"/data/fast/ckpt"}, {{8, 33}}},
                      MountCase{"Prefix_is_by_component", {"/database"}, {{254, 0}}},
                      MountCase{"Escaped_space", {"/my disk"}, {{8, 49}}},
                      MountCase{"Duplicates_collapse", {"/data", "/data/a"}, {{8, 17}}}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(MountDevices, MalformedLineIsNamed) {
  std::vector<std::pair<unsigned, unsigned>> got;
  const Status st = MountDevices("22 27 zz / /proc\n", {"/"}, &got);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace tidal::agent
