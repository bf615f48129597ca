// Prediction (docs/design.md#prediction) in the extender: learning per-workload GPU memory from
// the pod watch and the metrics (PodPeakTracker, KubeSync), and the refresher's
// load forecast in the published view.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/fake_apiserver.h"
#include "tidal/extender/kube_sync.h"
#include "tidal/extender/peak_tracker.h"
#include "tidal/extender/refresher.h"
#include "tidal/kubetypes/pod.h"

namespace tidal::extender {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;

MetricsSnapshot Snapshot(TimeMs at, const std::vector<std::vector<int>>& used_gib_per_node) {
  MetricsSnapshot s;
  s.fetched_at_ms = at;
  for (std::size_t n = 0; n < used_gib_per_node.size(); ++n) {
    NodeMetrics m;
    m.sample_time_ms = at;
    for (std::size_t g = 0; g < used_gib_per_node[n].size(); ++g) {
      Gpu gpu;
      gpu.index = static_cast<int>(g);
      gpu.memory_total = 24 * kGi;
      gpu.memory_used = used_gib_per_node[n][g] * kGi;
      m.gpus.push_back(gpu);
    }
    s.nodes["n" + std::to_string(n)] = m;
  }
  return s;
}

MemoryLearningConfig LearnAll() {
  MemoryLearningConfig c;
  c.enabled = true;
  c.quantile = 1;
  c.min_samples = 1;
  c.headroom = 0;
  return c;
}

TEST(ParseGpuAnnotation, Table) {
  struct Case {
    std::string text;
    std::vector<int> want;
  };
  const std::vector<Case> cases = {
      {"0", {0}}, {"3,1", {1, 3}}, {"", {}},    {"1,", {}}, {"a", {}},
      {"-1", {}}, {"64", {}},      {"2,2", {}}, {" 1", {}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE("\"" + tc.text + "\"");
    EXPECT_EQ(ParseGpuAnnotation(tc.text), tc.want);
  }
}

TEST(PodPeakTracker, LearnsTheBusiestGpuOfALonePod) {
  MemoryLearner learner(LearnAll());
  PodPeakTracker t(learner);
  t.Running("ml/a", "wa", "n0", {0, 1});
  t.Running("ml/b", "wb", "n0", {2});
  t.Running("ml/c", "wc", "n0", {2});  // shares GPU 2 with b: neither learns
  t.Sample(Snapshot(1000, {{10, 12, 20, 0}}));
  t.Sample(Snapshot(1000, {{30, 30, 30, 0}}));  // the same sample read again: ignored
  t.Sample(Snapshot(2000, {{14, 11, 20, 0}}));
  t.Ended("ml/a");
  t.Ended("ml/b");
  t.Ended("ml/c");
  t.Ended("ml/never-seen");
  EXPECT_EQ(learner.Estimate("wa"), 14 * kGi) << "the most on either GPU over both samples";
  EXPECT_FALSE(learner.Estimate("wb"));
  EXPECT_FALSE(learner.Estimate("wc"));
  EXPECT_EQ(t.tracked(), 0u);
}

TEST(PodPeakTracker, APodWithoutASampleTeachesNothing) {
  MemoryLearner learner(LearnAll());
  PodPeakTracker t(learner);
  t.Running("ml/a", "wa", "n9", {0});  // no metrics for n9
  t.Sample(Snapshot(1000, {{10}}));
  t.Ended("ml/a");
  EXPECT_EQ(learner.keys(), 0u);
}

TEST(KubeSyncTest, PodEventsFeedThePeakTracker) {
  MemoryLearner learner(LearnAll());
  PodPeakTracker peaks(learner);
  NodeCatalog catalog;
  auto log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
  KubeSync sync(catalog, nullptr, log, &peaks);
  const nlohmann::json running =
      testing::TestPod("ml", "train", 1, "n0", "Running", {{"tidal.io/gpus", "1"}});
  const nlohmann::json unannotated = testing::TestPod("ml", "other", 1, "n0", "Running");
  sync.pod_handler().Replace({running.dump(), unannotated.dump()});
  EXPECT_EQ(peaks.tracked(), 1u) << "only pods whose GPUs the bind recorded";
  peaks.Sample(Snapshot(1000, {{3, 17}}));
  nlohmann::json done = running;
  done["status"]["phase"] = "Succeeded";
  sync.pod_handler().Apply({kube::WatchEvent::Type::kModified, done.dump(), "2"});
  RawPod raw;
  ASSERT_TRUE(DecodePodJson(running.dump(), &raw).ok());
  EXPECT_EQ(learner.Estimate(WorkloadKey(ToPodDemand(raw))), 17 * kGi);
  EXPECT_EQ(WorkloadKey(ToPodDemand(raw)), "ml|pytorch/pytorch||0|1");
}

class RisingSource final : public MetricsSource {
 public:
  Status Fetch(TimeMs now_ms, MetricsSnapshot* out) override {
    *out = Snapshot(now_ms, {{used_gib, used_gib, used_gib, used_gib}});
    fetches.fetch_add(1);
    return Status::Ok();
  }
  std::string Describe() const override { return "rising"; }
  int used_gib = 0;
  std::atomic<int> fetches{0};
};

TEST(Refresher, PublishesTheForecastTrendOfEachNode) {
  RisingSource source;
  ViewStore store;
  NodeCatalog catalog;
  ManualClock clock;
  clock.Set(1'000'000);
  ForecastConfig fc;
  fc.enabled = true;
  fc.alpha = 1;  // level = last sample, so the trend is exact on a straight line
  fc.beta = 1;
  fc.horizon_ms = 20'000;
  LoadForecaster forecaster(fc);
  auto log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
  Refresher r(source, store, catalog, clock, 20'000, log);
  r.AttachForecaster(&forecaster);
  for (int step = 0; step < 3; ++step) {  // 6, 9, 12 GiB of 24: +12.5 % every 20 s
    source.used_gib = 6 + 3 * step;
    r.RefreshOnce();
    clock.Advance(20'000);
  }
  clock.Advance(-20'000);
  const auto view = store.Load();
  const NodeState& n = view->nodes->at("n0");
  ASSERT_TRUE(n.has_load_trend);
  EXPECT_DOUBLE_EQ(n.load.gpu_memory, 0.5);
  EXPECT_NEAR(n.load_trend.gpu_memory, 0.125, 1e-12) << "one more step by now + 20 s";
}

// The refresher's own thread feeds the forecast and samples the peak tracker, and
// saves what the learner learned, while the watch starts and ends pods and
// request threads read the learned estimate, the published trend and republish
// (a bind). Meant for the tsan preset, where a race is a report; in every build
// it checks that all three kept working.
TEST(Refresher, ForecastAndLearningUnderConcurrentUse) {
  RisingSource source;
  source.used_gib = 9;
  ViewStore store;
  NodeCatalog catalog;
  SystemClock clock;
  ForecastConfig fc;
  fc.enabled = true;
  fc.horizon_ms = 20'000;
  LoadForecaster forecaster(fc);
  MemoryLearner learner(LearnAll());
  PodPeakTracker peaks(learner);
  const std::string file = ::testing::TempDir() + "tidal-learned-concurrent.txt";
  std::remove(file.c_str());
  auto log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
  Refresher r(source, store, catalog, clock, 2, log);  // a fetch every 2 ms
  r.AttachForecaster(&forecaster);
  r.AttachLearning(&peaks, &learner, file);
  r.Start();
  std::atomic<bool> done{false};
  std::thread watch([&] {
    for (int i = 0; i < 40; ++i) {
      const std::string key = "ml/p" + std::to_string(i);
      peaks.Running(key, "w", "n0", {i % 4});
      // A few fetches while it runs, however busy the machine is.
      const int seen = source.fetches.load();
      while (source.fetches.load() < seen + 3)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      peaks.Ended(key);
    }
    done = true;
  });
  int trends = 0;
  std::thread requests([&] {
    while (!done) {
      (void)learner.EstimateFor(PodDemand{});
      const auto view = store.Load();
      if (view->nodes) {
        const auto it = view->nodes->find("n0");
        if (it != view->nodes->end() && it->second.has_load_trend) ++trends;
      }
      r.Republish();
    }
  });
  watch.join();
  requests.join();
  r.Stop();
  EXPECT_GT(trends, 0) << "views carried the forecast";
  EXPECT_GE(learner.samples("w"), 30u) << "most pods were seen alone on their GPU and learned";
  EXPECT_EQ(learner.Estimate("w"), 9 * kGi);
  MemoryLearner reloaded(LearnAll());
  std::ifstream in(file);
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(reloaded.Load(saved).ok()) << "the refresher saved what was learned";
  EXPECT_GT(reloaded.samples("w"), 0u);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace tidal::extender
