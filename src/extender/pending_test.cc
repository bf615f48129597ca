#include "tidal/extender/pending.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <nlohmann/json.hpp>

namespace tidal::extender {
namespace {

using nlohmann::json;

struct PodSpec {
  std::string name;
  std::int64_t priority = 0;
  std::string created = "2026-12-06T10:00:00Z";
  std::string scheduler = "load-aware-scheduler";
  std::string node;  // bound when set
  bool unschedulable = false;
  std::string phase = "Pending";
};

PodSpec P(std::string name, std::int64_t priority = 0, std::string created = "2026-12-06T10:00:00Z",
          std::string scheduler = "load-aware-scheduler", std::string node = "",
          bool unschedulable = false, std::string phase = "Pending") {
  return {std::move(name), priority,      std::move(created), std::move(scheduler),
          std::move(node), unschedulable, std::move(phase)};
}

std::string PodJson(const PodSpec& p) {
  json pod = {
      {"metadata",
       {{"name", p.name},
        {"namespace", "ml"},
        {"uid", "uid-" + p.name},
        {"creationTimestamp", p.created}}},
      {"spec",
       {{"schedulerName", p.scheduler},
        {"priority", p.priority},
        {"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}},
      {"status", {{"phase", p.phase}}}};
  if (!p.node.empty()) pod["spec"]["nodeName"] = p.node;
  if (p.unschedulable)
    pod["status"]["conditions"] = {
        {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
  return pod.dump();
}

kube::WatchEvent Event(kube::WatchEvent::Type type, const PodSpec& p) {
  kube::WatchEvent e;
  e.type = type;
  e.object = PodJson(p);
  return e;
}

std::shared_ptr<spdlog::logger> NullLog() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

std::string NextName(const PendingPods& q, const std::string& pod,
                     const std::set<std::string>& being_bound = {}) {
  const auto next = q.NextAfter("uid-" + pod, [&](const std::string& key) {
    return being_bound.count(key.substr(key.find('/') + 1)) > 0;
  });
  return next ? next->name : "";
}

// kube-scheduler's PrioritySort: higher priority first, then the earlier creation.
TEST(PendingPods, NextInKubeSchedulersQueueOrder) {
  struct Case {
    std::string name;
    std::vector<PodSpec> pods;
    std::string scheduled, next;
    std::set<std::string> being_bound;
  };
  const std::string t0 = "2026-12-06T10:00:00Z", t1 = "2026-12-06T10:00:01Z",
                    t2 = "2026-12-06T10:00:02Z";
  const Case cases[] = {
      {"by_creation", {P("a", 0, t0), P("b", 0, t1), P("c", 0, t2)}, "a", "b", {}},
      {"priority_first", {P("a", 0, t0), P("b", 0, t1), P("c", 5, t2)}, "a", "c", {}},
      {"the_pod_itself_skipped", {P("a", 0, t0), P("b", 0, t1)}, "b", "a", {}},
      {"being_bound_skipped", {P("a", 0, t0), P("b", 0, t1), P("c", 0, t2)}, "b", "c", {"a"}},
      {"other_scheduler_left_out",
       {P("a", 0, t0), P("b", 9, t1, "default-scheduler"), P("c", 0, t2)},
       "a",
       "c",
       {}},
      {"unschedulable_left_out",
       {P("a", 0, t0), P("b", 0, t1, "load-aware-scheduler", "", true), P("c", 0, t2)},
       "a",
       "c",
       {}},
      {"bound_left_out",
       {P("a", 0, t0), P("b", 0, t1, "load-aware-scheduler", "node-1")},
       "a",
       "",
       {}},
      {"finished_left_out",
       {P("a", 0, t0), P("b", 0, t1, "load-aware-scheduler", "", false, "Failed")},
       "a",
       "",
       {}},
      {"alone", {P("a", 0, t0)}, "a", "", {}},
      {"unknown_pod", {P("a", 0, t0)}, "z", "", {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    PendingPods q(NullLog());
    std::vector<std::string> listed;
    for (const auto& p : c.pods) listed.push_back(PodJson(p));
    q.Replace(listed);
    EXPECT_EQ(NextName(q, c.scheduled, c.being_bound), c.next);
  }
}

TEST(PendingPods, FollowsTheWatch) {
  PendingPods q(NullLog());
  q.Replace({});
  using T = kube::WatchEvent::Type;
  q.Apply(Event(T::kAdded, P("a", 0, "2026-12-06T10:00:00Z")));
  q.Apply(Event(T::kAdded, P("b", 0, "2026-12-06T10:00:01Z")));
  q.Apply(Event(T::kAdded, P("c", 0, "2026-12-06T10:00:02Z")));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(NextName(q, "a"), "b");
  // b is bound: the watch of unbound pods sends it as deleted (it left the
  // selection), or modified with its node.
  q.Apply(Event(T::kModified, P("b", 0, "2026-12-06T10:00:01Z", "load-aware-scheduler", "n1")));
  EXPECT_EQ(NextName(q, "a"), "c");
  q.Apply(Event(T::kDeleted, P("c", 0, "2026-12-06T10:00:02Z")));
  EXPECT_EQ(NextName(q, "a"), "");
  EXPECT_EQ(q.size(), 1u);
  // A failed attempt marks a Unschedulable: it leaves the queue until that changes.
  q.Apply(Event(T::kAdded, P("d", 0, "2026-12-06T10:00:03Z")));
  q.Apply(Event(T::kModified, P("a", 0, "2026-12-06T10:00:00Z", "load-aware-scheduler", "", true)));
  EXPECT_EQ(NextName(q, "a"), "");
  EXPECT_EQ(NextName(q, "d"), "");
  q.Apply(Event(T::kModified, P("a", 0, "2026-12-06T10:00:00Z")));
  EXPECT_EQ(NextName(q, "d"), "a");
}

TEST(PendingPods, BoundedAndNeverBrokenByBadInput) {
  PendingPods q(NullLog(), /*max_pods=*/2);
  q.Replace({PodJson(P("a")), PodJson(P("b")), PodJson(P("c")), "{not json", R"({"spec": 5})"});
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.decode_errors(), 2u);
  kube::WatchEvent bad;
  bad.type = kube::WatchEvent::Type::kDeleted;
  bad.object = "[]";
  q.Apply(bad);
  EXPECT_EQ(q.size(), 2u);
}

// Past kMaxPendingSkipped pods being bound at the head, no next pod: the lookup
// under the lock stays short.
TEST(PendingPods, GivesUpAfterSoManyPodsBeingBound) {
  PendingPods q(NullLog());
  std::vector<std::string> listed;
  std::set<std::string> being_bound;
  for (int i = 0; i < kMaxPendingSkipped + 2; ++i) {
    char created[32];
    std::snprintf(created, sizeof created, "2026-12-06T10:%02d:00Z", i);
    const std::string name = "p" + std::to_string(i);
    listed.push_back(PodJson(P(name, 0, created)));
    if (i >= 1 && i <= kMaxPendingSkipped) being_bound.insert(name);
  }
  q.Replace(listed);
  EXPECT_EQ(NextName(q, "p0", being_bound), "");
  being_bound.erase("p3");
  EXPECT_EQ(NextName(q, "p0", being_bound), "p3");
}

}  // namespace
}  // namespace tidal::extender
