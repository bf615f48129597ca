#include "tidal/deviceplugin/pods.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tidal::deviceplugin {
namespace {

using json = nlohmann::json;

json Pod(const std::string& name, int gpus, const std::string& created) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", "uid-" + name},
            {"creationTimestamp", created},
            {"annotations", {{"tidal.io/gpus", "1"}}}}},
          {"spec",
           {{"nodeName", "n1"},
            {"containers",
             {{{"name", "main"},
               {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

TEST(DecodeNodePod, ReadsWhatSelectionNeeds) {
  json p = Pod("a", 2, "2026-01-01T00:00:05Z");
  p["spec"]["initContainers"] = {
      {{"name", "init"}, {"resources", {{"limits", {{"nvidia.com/gpu", "3"}}}}}}};
  p["spec"]["containers"].push_back(
      {{"name", "side"}, {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}});
  p["status"]["conditions"] = {{{"type", "PodScheduled"},
                                {"status", "True"},
                                {"lastTransitionTime", "2026-01-01T00:01:00Z"}}};
  p["metadata"]["annotations"]["tidal.io/gpus-allocated"] = "1";
  NodePod out;
  ASSERT_TRUE(DecodeNodePod(p.dump(), "nvidia.com/gpu", &out).ok());
  EXPECT_EQ(out.Key(), "ml/a");
  EXPECT_EQ(out.node, "n1");
  EXPECT_EQ(out.request, 3);  // max(2 + 1, 3)
  EXPECT_EQ(out.bound, "2026-01-01T00:01:00Z");
  EXPECT_TRUE(out.has_choice);
  EXPECT_EQ(out.choice, "1");
  EXPECT_TRUE(out.allocated);
  NodePod other;
  ASSERT_TRUE(DecodeNodePod(p.dump(), "example.com/fpga", &other).ok());
  EXPECT_EQ(other.request, 0);
}

TEST(DecodeNodePod, MalformedInputIsAnErrorNotACrash) {
  struct Case {
    const char* name;
    std::string text;
    bool ok;
  };
  const Case cases[] = {
      {"not JSON", "{", false},
      {"not an object", "[1]", false},
      {"no name", R"({"metadata":{}})", false},
      {"wrong types everywhere",
       R"({"metadata":{"name":"p","annotations":[1]},"spec":{"containers":{"a":1},"nodeName":3},"status":"x"})",
       true},
      {"odd quantities",
       R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1.5"}}},{"resources":{"limits":{"nvidia.com/gpu":-2}}}]}})",
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodePod p;
    const Status s = DecodeNodePod(c.text, "nvidia.com/gpu", &p);
    EXPECT_EQ(s.ok(), c.ok) << s.reason();
    if (s.ok()) {
      EXPECT_EQ(p.request, 0);
    }
  }
}

TEST(SelectPod, TakesTheEarliestBoundPodStillWaitingForItsDevices) {
  auto decode = [](const json& j) {
    NodePod p;
    EXPECT_TRUE(DecodeNodePod(j.dump(), "nvidia.com/gpu", &p).ok());
    return p;
  };
  const NodePod older = decode(Pod("older", 1, "2026-01-01T00:00:01Z"));
  const NodePod newer = decode(Pod("newer", 1, "2026-01-01T00:00:02Z"));
  NodePod running = decode(Pod("running", 1, "2026-01-01T00:00:00Z"));
  running.phase = "Running";
  NodePod started = decode(Pod("started", 1, "2026-01-01T00:00:00Z"));
  started.started = true;
  NodePod marked = decode(Pod("marked", 1, "2026-01-01T00:00:00Z"));
  marked.allocated = true;
  NodePod elsewhere = decode(Pod("elsewhere", 1, "2026-01-01T00:00:00Z"));
  elsewhere.node = "n2";
  NodePod two = decode(Pod("two", 2, "2026-01-01T00:00:00Z"));
  NodePod deleting = decode(Pod("deleting", 1, "2026-01-01T00:00:00Z"));
  deleting.deleting = true;
  NodePod bound_late = decode(Pod("bound-late", 1, "2026-01-01T00:00:00Z"));
  bound_late.bound = "2026-01-01T00:10:00Z";
  struct Case {
    const char* name;
    std::vector<NodePod> pods;
    int request;
    std::set<std::string> served;
    std::string want;  // "" none
  };
  const Case cases[] = {
      {"oldest first", {newer, older}, 1, {}, "older"},
      {"served pods are skipped", {newer, older}, 1, {"uid-older"}, "newer"},
      {"running, started, marked, deleting or elsewhere: never",
       {running, started, marked, elsewhere, deleting},
       1,
       {},
       ""},
      {"the request must match", {two, older}, 2, {}, "two"},
      {"binding time before creation time", {bound_late, newer}, 1, {}, "newer"},
      {"nothing to take", {}, 1, {}, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodePod* got = SelectPod(c.pods, "n1", c.request, c.served);
    EXPECT_EQ(got ? got->name : "", c.want);
  }
}

}  // namespace
}  // namespace tidal::deviceplugin
