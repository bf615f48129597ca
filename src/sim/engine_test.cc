#include "tidal/sim/engine.h"

#include <gtest/gtest.h>

#include <string>

namespace tidal::sim {
namespace {

TEST(Engine, OrdersByTimeThenInsertion) {
  Engine e;
  std::string log;
  e.At(20, [&] { log += "c"; });
  e.At(10, [&] { log += "a"; });
  e.At(10, [&] { log += "b"; });
  e.At(5, [&] {
    log += "0";
    e.At(10, [&] { log += "d"; });  // same time as a and b, inserted later
  });
  e.Run(100);
  EXPECT_EQ(log, "0abdc");
  EXPECT_EQ(e.events_run(), 5u);
  EXPECT_EQ(e.now(), 20);
}

TEST(Engine, StopsAtTheHorizonAndOnStop) {
  Engine e;
  int ran = 0;
  for (int t = 0; t < 10; ++t) e.At(t * 10, [&] { ++ran; });
  e.Run(45);
  EXPECT_EQ(ran, 5);
  e.At(60, [&] { e.Stop(); });
  e.Run(1000);
  EXPECT_EQ(ran, 7);  // 50 and 60 (inserted before the stop at 60), then nothing more
  EXPECT_FALSE(e.empty());
}

TEST(Engine, PastEventsRunNowAndTheClockFollows) {
  Engine e;
  TimeMs seen = -1;
  e.At(50, [&] { e.At(10, [&] { seen = e.clock().NowMs(); }); });
  e.Run(100);
  EXPECT_EQ(seen, 50);
}

TEST(Random, SameSeedSameNumbers) {
  Random a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
  EXPECT_NE(Random(42).Next(), c.Next());
  Random r(7);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.Uniform();
    EXPECT_GE(u, 0);
    EXPECT_LT(u, 1);
    EXPECT_LT(r.Below(10), 10u);
  }
}

}  // namespace
}  // namespace tidal::sim
