// Annotations, Pod objects and PodDisruptionBudgets as the rebalancer reads them.
#include "tidal/rebalance/pods.h"

#include <gtest/gtest.h>

namespace tidal::rebalance {
namespace {

TEST(MoveTraits, Table) {
  struct Case {
    std::string name;
    Labels annotations;
    bool ok;
    bool migratable = false;
    std::optional<TimeMs> checkpoint = std::nullopt;
    TimeMs startup = 60'000;
    std::uint64_t gpus = 0;
    std::string error = "";  // a part of the error
  };
  const std::vector<Case> cases{
      {"nothing: not movable, default start-up", {}, true},
      {"movable with costs",
       {{"tidal.io/migratable", "true"},
        {"tidal.io/checkpoint-interval", "15m"},
        {"tidal.io/startup-seconds", "90"},
        {"tidal.io/gpus", "0,2"}},
       true,
       true,
       900'000,
       90'000,
       0b101},
      {"false is not movable", {{"tidal.io/migratable", "false"}}, true},
      {"yes is not a bool",
       {{"tidal.io/migratable", "yes"}},
       false,
       false,
       {},
       0,
       0,
       "annotation tidal.io/migratable: \"yes\": expected \"true\" or \"false\""},
      {"checkpoint not a duration",
       {{"tidal.io/checkpoint-interval", "often"}},
       false,
       false,
       {},
       0,
       0,
       "tidal.io/checkpoint-interval: \"often\": expected a duration"},
      {"checkpoint zero",
       {{"tidal.io/checkpoint-interval", "0s"}},
       false,
       false,
       {},
       0,
       0,
       "above zero"},
      {"negative start-up",
       {{"tidal.io/startup-seconds", "-5"}},
       false,
       false,
       {},
       0,
       0,
       "tidal.io/startup-seconds"},
      {"GPU index too large", {{"tidal.io/gpus", "64"}}, false, false, {}, 0, 0, "tidal.io/gpus"},
      {"GPU repeated", {{"tidal.io/gpus", "1,1"}}, false, false, {}, 0, 0, "tidal.io/gpus"},
      {"GPU list trailing comma",
       {{"tidal.io/gpus", "1,"}},
       false,
       false,
       {},
       0,
       0,
       "tidal.io/gpus"},
      {"GPU list empty", {{"tidal.io/gpus", ""}}, true},
      {"GPU list with a space",
       {{"tidal.io/gpus", "0, 1"}},
       false,
       false,
       {},
       0,
       0,
       "tidal.io/gpus"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    MoveTraits t;
    const Status s = ParseMoveTraits(c.annotations, 60'000, &t);
    ASSERT_EQ(s.ok(), c.ok) << s.reason();
    if (!c.ok) {
      EXPECT_NE(s.reason().find(c.error), std::string::npos) << s.reason();
      continue;
    }
    EXPECT_EQ(t.migratable, c.migratable);
    EXPECT_EQ(t.checkpoint_interval_ms, c.checkpoint);
    EXPECT_EQ(t.startup_ms, c.startup);
    EXPECT_EQ(t.gpus.bits(), c.gpus);
  }
}

// The annotations that say how long a pod will run and how much it waits on
// storage: what the gain of a move is estimated from.
TEST(MoveTraits, GainAnnotations) {
  struct Case {
    std::string name;
    Labels annotations;
    bool ok;
    std::optional<TimeMs> duration = std::nullopt;
    std::optional<TimeMs> end = std::nullopt;
    std::optional<double> io_share = std::nullopt;
    std::string error = "";
  };
  const std::vector<Case> cases{
      {"none", {}, true},
      {"expected duration", {{"tidal.io/expected-duration", "5h"}}, true, 18'000'000},
      {"expected end",
       {{"tidal.io/expected-end", "2026-01-01T06:00:00Z"}},
       true,
       std::nullopt,
       1'767'247'200'000},
      {"IO share", {{"tidal.io/io-share", "0.5"}}, true, std::nullopt, std::nullopt, 0.5},
      {"IO share 1", {{"tidal.io/io-share", "1"}}, true, std::nullopt, std::nullopt, 1.0},
      {"IO share .25", {{"tidal.io/io-share", ".25"}}, true, std::nullopt, std::nullopt, 0.25},
      {"duration not a duration",
       {{"tidal.io/expected-duration", "long"}},
       false,
       {},
       {},
       {},
       "annotation tidal.io/expected-duration: \"long\""},
      {"end not a time",
       {{"tidal.io/expected-end", "tomorrow"}},
       false,
       {},
       {},
       {},
       "annotation tidal.io/expected-end: \"tomorrow\": expected an RFC 3339 time"},
      {"IO share above one",
       {{"tidal.io/io-share", "1.5"}},
       false,
       {},
       {},
       {},
       "annotation tidal.io/io-share: \"1.5\": expected a share between 0 and 1"},
      {"IO share negative", {{"tidal.io/io-share", "-0.1"}}, false, {}, {}, {}, "io-share"},
      {"IO share with a blank", {{"tidal.io/io-share", " 0.5"}}, false, {}, {}, {}, "io-share"},
      {"IO share with a tail", {{"tidal.io/io-share", "0.5x"}}, false, {}, {}, {}, "io-share"},
      {"IO share NaN", {{"tidal.io/io-share", "nan"}}, false, {}, {}, {}, "io-share"},
      {"IO share empty", {{"tidal.io/io-share", ""}}, false, {}, {}, {}, "io-share"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    MoveTraits t;
    const Status s = ParseMoveTraits(c.annotations, 60'000, &t);
    ASSERT_EQ(s.ok(), c.ok) << s.reason();
    if (!c.ok) {
      EXPECT_NE(s.reason().find(c.error), std::string::npos) << s.reason();
      continue;
    }
    EXPECT_EQ(t.expected_duration_ms, c.duration);
    EXPECT_EQ(t.expected_end_ms, c.end);
    EXPECT_EQ(t.io_share, c.io_share);
  }
}

TEST(EstimateRemaining, Table) {
  constexpr TimeMs kMin = 60'000, kNow = 1'000'000'000'000, kHorizon = 30 * kMin;
  using B = RemainingRun::Basis;
  struct Case {
    std::string name;
    std::optional<TimeMs> duration, end;
    TimeMs age;
    B basis;
    TimeMs ms, uncapped;
  } cases[] = {
      {"Lindy: as long again as it has run", {}, {}, 12 * kMin, B::kAge, 12 * kMin, 12 * kMin},
      {"Lindy, capped by the horizon", {}, {}, 3 * 60 * kMin, B::kAge, kHorizon, 180 * kMin},
      {"expected duration: what is left of it",
       40 * kMin,
       {},
       35 * kMin,
       B::kExpectedDuration,
       5 * kMin,
       5 * kMin},
      {"expected duration overrun: nothing left",
       40 * kMin,
       {},
       45 * kMin,
       B::kExpectedDuration,
       0,
       0},
      {"expected end: until then",
       {},
       kNow + 7 * kMin,
       3 * 60 * kMin,
       B::kExpectedEnd,
       7 * kMin,
       7 * kMin},
      {"expected end passed", {}, kNow - kMin, 10 * kMin, B::kExpectedEnd, 0, 0},
      {"expected end wins over the duration", 10 * 60 * kMin, kNow + 2 * kMin, 10 * kMin,
       B::kExpectedEnd, 2 * kMin, 2 * kMin},
      {"age unknown below zero is none", {}, {}, -5, B::kAge, 0, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    MoveTraits t;
    t.expected_duration_ms = c.duration;
    t.expected_end_ms = c.end;
    const RemainingRun r = EstimateRemaining(t, c.age, kNow, kHorizon);
    EXPECT_EQ(r.basis, c.basis);
    EXPECT_EQ(r.ms, c.ms);
    EXPECT_EQ(r.uncapped_ms, c.uncapped);
  }
}

TEST(WorkLost, Table) {
  struct Case {
    std::string name;
    TimeMs age;
    std::optional<TimeMs> interval;
    TimeMs lost;
  } cases[] = {{"no checkpoints: all of it", 7'200'000, std::nullopt, 7'200'000},
               {"since the last checkpoint", 7'320'000, 900'000, 120'000},
               {"right at a checkpoint", 1'800'000, 900'000, 0},
               {"not started", -5, 900'000, 0}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(WorkLostMs(c.age, c.interval), c.lost);
  }
}

TEST(Rfc3339, Table) {
  struct Case {
    std::string text;
    std::optional<TimeMs> ms;
  } cases[] = {{"1970-01-01T00:00:00Z", 0},
               {"2026-01-01T00:00:00Z", 1'767'225'600'000},
               {"2026-01-01T00:00:00.250Z", 1'767'225'600'250},
               {"2026-01-01T01:00:00+01:00", 1'767'225'600'000},
               {"2026-01-01", std::nullopt},
               {"2026-13-01T00:00:00Z", std::nullopt},
               {"2026-01-01T00:00:00", std::nullopt},
               {"2026-01-01T00:00:00Zjunk", std::nullopt},
               {"2026-01-01T00:00:00.Z", std::nullopt}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseRfc3339Ms(c.text), c.ms);
  }
}

TEST(DecodePodInfo, ReadsOwnerStartAndDemand) {
  const std::string json = R"({"metadata":{"name":"train-1","namespace":"ml","uid":"u1",
    "labels":{"app":"train"},"annotations":{"tidal.io/migratable":"true"},
    "ownerReferences":[{"kind":"ReplicaSet","name":"rs","controller":false},
                       {"kind":"Job","name":"train","controller":true}]},
    "spec":{"nodeName":"a10-1","containers":[{"name":"m","image":"pytorch",
      "resources":{"limits":{"nvidia.com/gpu":"2"}}}]},
    "status":{"phase":"Running","startTime":"2026-01-01T00:00:00Z"}})";
  PodInfo p;
  ASSERT_TRUE(DecodePodInfo(json, &p).ok());
  EXPECT_EQ(p.Key(), "ml/train-1");
  EXPECT_EQ(p.node, "a10-1");
  EXPECT_EQ(p.owner, "Job/train");
  EXPECT_EQ(p.started_ms, 1'767'225'600'000);
  EXPECT_EQ(p.demand.gpu_count, 2);
  EXPECT_EQ(p.demand.annotations.at("tidal.io/migratable"), "true");
  EXPECT_FALSE(p.deleting);
}

TEST(CountNvlinkPods, Table) {
  struct Case {
    const char* name;
    std::string node, phase;
    int gpus;
    bool nvlink_required, deleting;
    int counted;  // on node "a"
  };
  const Case cases[] = {
      {"a running NVLink pod counts", "a", "Running", 2, true, false, 1},
      {"a pending bound one counts (it will compete soon)", "a", "Pending", 2, true, false, 1},
      {"a finished one does not", "a", "Succeeded", 2, true, false, 0},
      {"a failed one does not", "a", "Failed", 2, true, false, 0},
      {"one being deleted does not", "a", "Running", 2, true, true, 0},
      {"one without GPUs does not", "a", "Running", 0, true, false, 0},
      {"one without NVLink use does not", "a", "Running", 2, false, false, 0},
      {"an unbound one counts nowhere", "", "Pending", 2, true, false, 0},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PodInfo p;
    p.node = tc.node;
    p.phase = tc.phase;
    p.deleting = tc.deleting;
    p.demand.gpu_count = tc.gpus;
    p.demand.nvlink_required = tc.nvlink_required;
    // A second, plain NVLink pod on another node is counted there only.
    PodInfo other = p;
    other.node = "b";
    other.phase = "Running";
    other.deleting = false;
    other.demand.gpu_count = 4;
    other.demand.nvlink_required = true;
    const NvlinkPodCounts counts = CountNvlinkPods({p, other}, NvlinkDetection{});
    EXPECT_EQ(counts.count("a") ? counts.at("a") : 0, tc.counted);
    EXPECT_EQ(counts.at("b"), 1);
    EXPECT_EQ(counts.count(""), 0u);
  }
}

TEST(DecodePodInfo, Errors) {
  struct Case {
    std::string name, json, error;
  } cases[] = {
      {"not JSON", "{", "JSON"},
      {"bad start time", R"({"metadata":{"name":"p"},"status":{"startTime":"yesterday"}})",
       "status.startTime: \"yesterday\": expected RFC 3339"},
      {"owner references not an array", R"({"metadata":{"name":"p","ownerReferences":{}}})",
       "ownerReferences: expected an array"},
      {"controller without a name",
       R"({"metadata":{"name":"p","ownerReferences":[{"kind":"Job","controller":true}]}})",
       "needs kind and name"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    PodInfo p;
    const Status s = DecodePodInfo(c.json, &p);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.reason().find(c.error), std::string::npos) << s.reason();
  }
}

TEST(DisruptionBudget, DecodeAndCover) {
  struct Case {
    std::string name, json;
    bool ok;
    int allowed = 0;
    bool covers_train = false, covers_serve = false;
    std::string error = "";
  } cases[] = {
      {"match labels",
       R"({"metadata":{"name":"b","namespace":"ml"},"spec":{"selector":{"matchLabels":{"app":"train"}}},
          "status":{"disruptionsAllowed":1}})",
       true, 1, true, false},
      {"no status yet: nothing allowed",
       R"({"metadata":{"name":"b","namespace":"ml"},"spec":{"selector":{"matchLabels":{"app":"train"}}}})",
       true, 0, true, false},
      {"empty selector: the whole namespace",
       R"({"metadata":{"name":"b","namespace":"ml"},"spec":{"selector":{}},"status":{"disruptionsAllowed":2}})",
       true, 2, true, true},
      {"expressions: taken as the whole namespace",
       R"({"metadata":{"name":"b","namespace":"ml"},"spec":{"selector":{"matchExpressions":[{"key":"app","operator":"In","values":["x"]}]}}})",
       true, 0, true, true},
      {"negative allowed", R"({"metadata":{"name":"b"},"status":{"disruptionsAllowed":-1}})", false,
       0, false, false, "disruptionsAllowed: expected a count"},
      {"label not a string",
       R"({"metadata":{"name":"b"},"spec":{"selector":{"matchLabels":{"app":1}}}})", false, 0,
       false, false, "matchLabels.app: expected a string"},
      {"no name", R"({"metadata":{}})", false, 0, false, false, "metadata.name"},
  };
  PodDemand train, serve, other_ns;
  train.namespace_name = serve.namespace_name = "ml";
  train.labels = {{"app", "train"}};
  serve.labels = {{"app", "serve"}};
  other_ns.namespace_name = "prod";
  other_ns.labels = train.labels;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    DisruptionBudget b;
    const Status s = DecodeDisruptionBudget(c.json, &b);
    ASSERT_EQ(s.ok(), c.ok) << s.reason();
    if (!c.ok) {
      EXPECT_NE(s.reason().find(c.error), std::string::npos) << s.reason();
      continue;
    }
    EXPECT_EQ(b.disruptions_allowed, c.allowed);
    EXPECT_EQ(b.Covers(train), c.covers_train);
    EXPECT_EQ(b.Covers(serve), c.covers_serve);
    EXPECT_FALSE(b.Covers(other_ns));
  }
}

}  // namespace
}  // namespace tidal::rebalance
