#include "tidal/kube/objects.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tidal::kube {
namespace {

TEST(Objects, Node) {
  KubeNode n;
  ASSERT_TRUE(DecodeNode(R"({"metadata":{"name":"gpu-1","resourceVersion":"7",
      "labels":{"tidal.io/pool":"golden"}},"spec":{"unschedulable":true},
      "status":{"allocatable":{"cpu":"31500m","memory":"250Gi","nvidia.com/gpu":"8","pods":"110"}}})",
                         &n)
                  .ok());
  EXPECT_EQ(n.name, "gpu-1");
  EXPECT_EQ(n.resource_version, "7");
  EXPECT_EQ(n.labels.at("tidal.io/pool"), "golden");
  EXPECT_TRUE(n.unschedulable);
  EXPECT_EQ(n.allocatable_gpus, 8);
  EXPECT_EQ(n.cpu_milli_allocatable, 31500);
  EXPECT_EQ(n.memory_allocatable, Bytes{250} << 30);
}

TEST(Objects, MalformedNodesNameTheField) {
  struct Case {
    std::string name, json, expect;
  };
  const std::vector<Case> cases = {
      {"not json", "{", "not valid JSON"},
      {"array", "[]", "expected a JSON object"},
      {"no name", R"({"metadata":{}})", "metadata.name"},
      {"label not string", R"({"metadata":{"name":"a","labels":{"x":1}}})", "labels.x"},
      {"fractional gpus",
       R"({"metadata":{"name":"a"},"status":{"allocatable":{"nvidia.com/gpu":"0.5"}}})",
       "nvidia.com/gpu"},
      {"bad cpu", R"({"metadata":{"name":"a"},"status":{"allocatable":{"cpu":"lots"}}})", "cpu"},
      {"unschedulable not bool", R"({"metadata":{"name":"a"},"spec":{"unschedulable":"yes"}})",
       "unschedulable"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    KubeNode n;
    Status s = DecodeNode(c.json, &n);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.reason().find(c.expect), std::string::npos) << s.reason();
  }
}

TEST(Objects, PodCountsGpusAsKubeSchedulerDoes) {
  KubePod p;
  ASSERT_TRUE(DecodePod(R"({"metadata":{"name":"train","namespace":"ml","uid":"u1",
      "resourceVersion":"9","deletionTimestamp":"2026-01-01T00:00:00Z"},
      "spec":{"nodeName":"gpu-1","schedulerName":"load-aware-scheduler",
        "initContainers":[{"name":"i","image":"x","resources":{"limits":{"nvidia.com/gpu":"4"}}}],
        "containers":[{"name":"a","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}},
                      {"name":"b","image":"x","resources":{"requests":{"nvidia.com/gpu":"2"}}}]},
      "status":{"phase":"Running"}})",
                        &p)
                  .ok());
  EXPECT_EQ(p.Key(), "ml/train");
  EXPECT_EQ(p.uid, "u1");
  EXPECT_EQ(p.node_name, "gpu-1");
  EXPECT_EQ(p.phase, "Running");
  EXPECT_TRUE(p.deleting);
  EXPECT_EQ(p.gpus, 4);  // max(1 + 2, 4)
  EXPECT_TRUE(p.Active());
  p.phase = "Succeeded";
  EXPECT_FALSE(p.Active());
}

TEST(Objects, ListAndStatus) {
  ListPage page;
  ASSERT_TRUE(DecodeList(R"({"kind":"NodeList","metadata":{"resourceVersion":"42","continue":"c1"},
      "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})",
                         &page)
                  .ok());
  EXPECT_EQ(page.resource_version, "42");
  EXPECT_EQ(page.continue_token, "c1");
  ASSERT_EQ(page.items.size(), 2u);
  EXPECT_EQ(page.items[1], R"({"metadata":{"name":"b"}})");
  EXPECT_FALSE(DecodeList(R"({"items":{}})", &page).ok());
  EXPECT_FALSE(DecodeList(R"({"items":[1]})", &page).ok());

  ApiStatus st;
  ASSERT_TRUE(
      DecodeApiStatus(R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})", &st)
          .ok());
  EXPECT_EQ(st.code, 410);
  EXPECT_EQ(st.reason, "Expired");
  EXPECT_FALSE(DecodeApiStatus(R"({"code":"410"})", &st).ok());
}

TEST(Objects, WatchEvents) {
  struct Case {
    std::string name, line;
    bool ok;
    WatchEvent::Type type;
    std::string rv;
  };
  const std::vector<Case> cases = {
      {"added", R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})",
       true, WatchEvent::Type::kAdded, "5"},
      {"bookmark", R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"77"}}})", true,
       WatchEvent::Type::kBookmark, "77"},
      {"error", R"({"type":"ERROR","object":{"kind":"Status","code":410}})", true,
       WatchEvent::Type::kError, ""},
      {"unknown type", R"({"type":"RENAMED","object":{}})", false, WatchEvent::Type::kAdded, ""},
      {"no object", R"({"type":"ADDED"})", false, WatchEvent::Type::kAdded, ""},
      {"truncated", R"({"type":"ADDED","object":{"metadata")", false, WatchEvent::Type::kAdded, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    WatchEvent ev;
    ASSERT_EQ(DecodeWatchEvent(c.line, &ev).ok(), c.ok);
    if (!c.ok) continue;
    EXPECT_EQ(ev.type, c.type);
    EXPECT_EQ(ev.resource_version, c.rv);
  }
}

TEST(Objects, BodiesHaveTheApiShapes) {
  const auto b = nlohmann::json::parse(EncodeBinding("ml", "train-0", "u-1", "gpu-\"7\""));
  EXPECT_EQ(b["apiVersion"], "v1");
  EXPECT_EQ(b["kind"], "Binding");
  EXPECT_EQ(b["metadata"]["name"], "train-0");
  EXPECT_EQ(b["metadata"]["namespace"], "ml");
  EXPECT_EQ(b["metadata"]["uid"], "u-1");
  EXPECT_EQ(b["target"]["apiVersion"], "v1");
  EXPECT_EQ(b["target"]["kind"], "Node");
  EXPECT_EQ(b["target"]["name"], "gpu-\"7\"");
  EXPECT_FALSE(
      nlohmann::json::parse(EncodeBinding("ml", "p", "", "n"))["metadata"].contains("uid"));
  EXPECT_FALSE(
      nlohmann::json::parse(EncodeBinding("ml", "p", "", "n"))["metadata"].contains("annotations"));
  const auto annotated = nlohmann::json::parse(
      EncodeBinding("ml", "p", "u", "n", {{"tidal.io/gpus", "0,1"}, {"a\"b", "c"}}));
  EXPECT_EQ(annotated["metadata"]["annotations"],
            nlohmann::json::parse(R"({"tidal.io/gpus":"0,1","a\"b":"c"})"));

  const auto p = nlohmann::json::parse(EncodeAnnotationPatch("tidal.io/gpus", "0,1"));
  EXPECT_EQ(p, nlohmann::json::parse(R"({"metadata":{"annotations":{"tidal.io/gpus":"0,1"}}})"));

  const auto e = nlohmann::json::parse(EncodeEviction("ml", "p"));
  EXPECT_EQ(e["apiVersion"], "policy/v1");
  EXPECT_EQ(e["kind"], "Eviction");
  EXPECT_EQ(e["metadata"]["name"], "p");
  EXPECT_EQ(e["metadata"]["namespace"], "ml");

  EXPECT_EQ(UrlEncode("spec.nodeName!="), "spec.nodeName%21%3D");
}

}  // namespace
}  // namespace tidal::kube
