#include "tidal/core/fork_join.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tidal {
namespace {

TEST(ForkJoin, RunsEveryPartOnce) {
  struct Case {
    const char* name;
    int helpers, parts, spin_us;
  };
  const Case cases[] = {
      {"no helpers: a loop", 0, 5, 0},
      {"one part", 3, 1, 0},
      {"fewer parts than threads", 3, 2, 0},
      {"more parts than threads", 1, 37, 0},
      {"helpers that sleep between jobs", 2, 8, 0},
      {"helpers that poll between jobs", 2, 8, 1000},
      {"no parts", 2, 0, 0},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ForkJoin pool(tc.helpers, tc.spin_us);
    EXPECT_EQ(pool.parallelism(), tc.helpers + 1);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> runs(tc.parts);
      pool.Run(tc.parts, [&](int part) { runs[part].fetch_add(1); });
      for (int p = 0; p < tc.parts; ++p) ASSERT_EQ(runs[p].load(), 1) << "part " << p;
    }
  }
}

TEST(ForkJoin, UsesTheHelpers) {
  ForkJoin pool(1, 1000);
  // Each part waits (a bounded time) for the other to start: only two threads
  // running them at once can both see it.
  std::atomic<int> started{0};
  std::atomic<int> saw_other{0};
  pool.Run(2, [&](int) {
    ++started;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    if (started.load() == 2) ++saw_other;
  });
  EXPECT_EQ(saw_other.load(), 2);
}

TEST(ForkJoin, ConcurrentRunsEachGetEveryPart) {
  ForkJoin pool(2, 100);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 200; ++round) {
        const int parts = 1 + (c + round) % 7;
        std::vector<std::atomic<int>> runs(parts);
        pool.Run(parts, [&](int part) { runs[part].fetch_add(1); });
        for (int p = 0; p < parts; ++p) wrong += runs[p].load() != 1;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Prepare wakes the helpers ahead of a job; with or without the job following,
// every job still runs each part once and the pool still stops.
TEST(ForkJoin, PreparedHelpersTakeTheNextJobOrGoBackToSleep) {
  struct Case {
    const char* name;
    int prepare_us;
    bool run_after;
  };
  const Case cases[] = {
      {"job follows", 100000, true},
      {"no job: back to sleep at once", 0, false},
      {"no job within the wait", 200, false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ForkJoin pool(2, 0, tc.prepare_us);
    for (int round = 0; round < 20; ++round) {
      pool.Prepare();
      if (!tc.run_after) std::this_thread::sleep_for(std::chrono::microseconds(300));
      std::vector<std::atomic<int>> runs(5);
      pool.Run(5, [&](int part) { runs[part].fetch_add(1); });
      for (int p = 0; p < 5; ++p) ASSERT_EQ(runs[p].load(), 1) << "part " << p;
    }
    pool.Prepare();  // and destroyed while the helpers wait awake
  }
}

TEST(ForkJoin, RethrowsAPartsException) {
  ForkJoin pool(2, 0);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.Run(6,
                        [&](int part) {
                          if (part == 3) throw std::runtime_error("part 3");
                          ++finished;
                        }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 5) << "the other parts still run";
  // And the pool is still usable.
  std::atomic<int> runs{0};
  pool.Run(4, [&](int) { ++runs; });
  EXPECT_EQ(runs.load(), 4);
}

}  // namespace
}  // namespace tidal
