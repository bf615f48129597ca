#include "tidal/deviceplugin/devices.h"

#include <gtest/gtest.h>

namespace tidal::deviceplugin {
namespace {

Inventory FourGpus(int replicas) {
  Inventory inv;
  inv.replicas = replicas;
  for (int i = 0; i < 4; ++i) inv.gpus.push_back({i, "GPU-" + std::to_string(i), true, ""});
  return inv;
}

std::vector<std::string> AllIds(const Inventory& inv) {
  std::vector<std::string> ids;
  for (const auto& d : ListDevices(inv)) ids.push_back(d.id);
  return ids;
}

TEST(ReplicaId, ParsesOnlyItsOwnForm) {
  struct Case {
    const char* name;
    std::string id;
    bool ok;
    std::string uuid;
    int k;
  };
  const Case cases[] = {
      {"replica", "GPU-1a::3", true, "GPU-1a", 3},
      {"uuid with colons kept", "MIG-a::b::0", true, "MIG-a::b", 0},
      {"no replica", "GPU-1a", false, "", 0},
      {"empty replica", "GPU-1a::", false, "", 0},
      {"negative", "GPU-1a::-1", false, "", 0},
      {"not a number", "GPU-1a::x", false, "", 0},
      {"no uuid", "::1", false, "", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string uuid;
    int k = -1;
    EXPECT_EQ(ParseReplicaId(c.id, &uuid, &k), c.ok);
    if (c.ok) {
      EXPECT_EQ(uuid, c.uuid);
      EXPECT_EQ(k, c.k);
      EXPECT_EQ(ReplicaId(uuid, k), c.id);
    }
  }
}

TEST(ListDevices, EachGpuIsReplicasDevicesWithItsHealth) {
  Inventory inv = FourGpus(2);
  inv.gpus[1].healthy = false;
  const auto devices = ListDevices(inv);
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_EQ(devices[0].id, "GPU-0::0");
  EXPECT_EQ(devices[3].id, "GPU-1::1");
  EXPECT_FALSE(devices[2].healthy);
  EXPECT_FALSE(devices[3].healthy);
  EXPECT_TRUE(devices[4].healthy);
}

TEST(CheckChoice, RefusesWhatTheNodeCannotGive) {
  Inventory inv = FourGpus(2);
  inv.gpus[3].healthy = false;
  inv.gpus[3].why = "XID 79";
  struct Case {
    const char* name;
    std::vector<int> gpus;
    int request;
    std::string reason;  // "" when accepted
  };
  const Case cases[] = {
      {"as many GPUs as devices", {0, 2}, 2, ""},
      {"fewer GPUs than devices", {1}, 2, ""},
      {"more GPUs than requested", {0, 1}, 1, "names 2 GPUs but the container requests 1 device"},
      {"a GPU the node lacks", {7}, 1, "GPU 7, which this node does not have (GPUs: 0,1,2,3)"},
      {"an unhealthy GPU", {3}, 1, "GPU 3 (GPU-3), which is unhealthy: XID 79"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Status s = CheckChoice(inv, c.gpus, c.request);
    EXPECT_EQ(s.ok(), c.reason.empty()) << s.reason();
    if (!c.reason.empty()) {
      EXPECT_EQ(s.code(), Code::kUnresolvable);
      EXPECT_NE(s.reason().find(c.reason), std::string::npos) << s.reason();
    }
  }
}

TEST(PreferDevices, FollowsTheChoiceElseTheLeastSharedGpus) {
  const Inventory inv = FourGpus(2);
  const std::vector<std::string> all = AllIds(inv);
  // GPU 0 has both replicas held, GPU 1 one: free are GPU-1::1 and GPUs 2, 3.
  const std::vector<std::string> some{"GPU-1::1", "GPU-2::0", "GPU-2::1", "GPU-3::0", "GPU-3::1"};
  const std::vector<int> c20{2, 0}, c3{3}, c0{0}, c1{1};
  struct Case {
    const char* name;
    std::vector<std::string> available, must;
    int size;
    const std::vector<int>* chosen;
    bool ok;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"choice, one replica of each, in its order",
       all,
       {},
       2,
       &c20,
       true,
       {"GPU-2::0", "GPU-0::0"}},
      {"fewer GPUs than devices: both replicas", all, {}, 2, &c3, true, {"GPU-3::0", "GPU-3::1"}},
      {"choice without a free replica", some, {}, 1, &c0, false, {}},
      {"choice takes the free replica", some, {}, 1, &c1, true, {"GPU-1::1"}},
      {"fallback: lowest index when all are idle",
       all,
       {},
       2,
       nullptr,
       true,
       {"GPU-0::0", "GPU-1::0"}},
      {"fallback: least held first",
       some,
       {},
       3,
       nullptr,
       true,
       {"GPU-2::0", "GPU-3::0", "GPU-1::1"}},
      {"must include comes first", all, {"GPU-3::1"}, 2, nullptr, true, {"GPU-3::1", "GPU-0::0"}},
      {"foreign IDs are ignored", {"other", "GPU-9::0", "GPU-2::5"}, {}, 1, nullptr, true, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> out;
    const Status s = PreferDevices(inv, c.available, c.must, c.size, c.chosen, &out);
    EXPECT_EQ(s.ok(), c.ok) << s.reason();
    if (c.ok) {
      EXPECT_EQ(out, c.want);
    }
  }
}

TEST(GpusOfDevices, NamesEachGpuOnceAndRefusesForeignIds) {
  const Inventory inv = FourGpus(2);
  std::vector<int> gpus;
  ASSERT_TRUE(GpusOfDevices(inv, {"GPU-2::1", "GPU-0::0", "GPU-2::0"}, &gpus).ok());
  EXPECT_EQ(gpus, (std::vector<int>{2, 0}));
  const Status s = GpusOfDevices(inv, {"GPU-2::9"}, &gpus);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.reason().find("GPU-2::9"), std::string::npos);
}

}  // namespace
}  // namespace tidal::deviceplugin
