#include "tidal/metrics/reservations.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

Reservation R(std::string pod, std::string node, std::vector<int> gpus, Bytes mem, TimeMs at,
              bool nvlink = false) {
  Reservation r;
  r.pod = std::move(pod);
  r.node = std::move(node);
  for (int g : gpus) r.gpus.Add(g);
  r.memory_per_gpu = mem;
  r.placed_at_ms = at;
  r.uses_nvlink = nvlink;
  return r;
}

TEST(Reservations, InFlightPlacementsAddToTheNodesGpusAndNvlinkIndex) {
  ReservationBook book;
  book.Add(R("ns/a", "n1", {0}, 8 * kGi, 0));
  book.Add(R("ns/b", "n1", {0, 1}, 4 * kGi, 0, true));
  book.Add(R("ns/c", "n2", {0}, 20 * kGi, 0));
  NodeState n1 = NodeBuilder("n1").Gpus(4, 24 * kGi).Used(0, 2 * kGi).Build();
  book.ApplyTo(n1, 2);
  EXPECT_EQ(n1.gpus[0].memory_used, 14 * kGi);  // measured 2 + in flight 8 + 4
  EXPECT_EQ(n1.gpus[1].memory_used, 4 * kGi);
  EXPECT_EQ(n1.gpus[2].memory_used, 0);
  EXPECT_EQ(n1.gpu_free()[0], 10 * kGi);
  EXPECT_DOUBLE_EQ(n1.nvlink_competition, 1.0 / 8);
  EXPECT_NEAR(n1.load.gpu_memory, 18.0 / 96, 1e-12);
}

TEST(Reservations, ExpiryEndsTheInFlightPeriod) {
  struct Case {
    const char* name;
    TimeMs now;
    std::map<std::string, TimeMs> samples;
    std::size_t want_in_flight;
  };
  const Case cases[] = {
      {"no newer sample, within TTL: in flight", 10'000, {{"n1", 5'000}}, 1},
      {"a sample too soon after placement does not show the pod", 14'000, {{"n1", 14'000}}, 1},
      {"a sample a scrape interval after placement shows it", 20'000, {{"n1", 16'000}}, 0},
      {"TTL passes", 121'000, {}, 0},
      {"another node's sample does not count", 20'000, {{"n2", 19'000}}, 1},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ReservationBook book;  // visible after 15 s, TTL 120 s, claims on
    book.Add(R("ns/a", "n1", {0}, 8 * kGi, 1'000));
    book.Expire(tc.now, tc.samples);
    EXPECT_EQ(book.in_flight(), tc.want_in_flight);
    EXPECT_EQ(book.size(), 1u);  // a claim stays until the pod is gone
  }
}

TEST(Reservations, ClaimsAreAFloorWhileMemoryRamps) {
  struct Case {
    const char* name;
    Bytes measured;
    Bytes want;
  };
  // Two pods of 10 GiB each on GPU 0, both visible: the GPU counts as at least 20 GiB.
  const Case cases[] = {
      {"still ramping: the claims win", 6 * kGi, 20 * kGi},
      {"measured above the claims (a foreign pod): the measurement wins", 23 * kGi, 23 * kGi},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    ReservationBook book;
    book.Add(R("ns/a", "n1", {0}, 10 * kGi, 0));
    book.Add(R("ns/b", "n1", {0}, 10 * kGi, 0));
    book.Expire(200'000, {});
    NodeState n = NodeBuilder("n1").Gpus(1, 24 * kGi).Used(0, tc.measured).Build();
    book.ApplyTo(n, 2);
    EXPECT_EQ(n.gpus[0].memory_used, tc.want);
  }
}

TEST(Reservations, WithoutClaimsExpiredPlacementsAreDropped) {
  ReservationOptions o;
  o.claims = false;
  ReservationBook book(o);
  book.Add(R("ns/a", "n1", {0}, 8 * kGi, 0));
  book.Expire(200'000, {});
  EXPECT_EQ(book.size(), 0u);
}

TEST(Reservations, RemoveForgetsAPod) {
  ReservationBook book;
  book.Add(R("ns/a", "n1", {0}, 8 * kGi, 0));
  book.Remove("ns/a");
  NodeState n1 = NodeBuilder("n1").Gpus(1, 24 * kGi).Build();
  book.ApplyTo(n1, 2);
  EXPECT_EQ(n1.gpus[0].memory_used, 0);
}

}  // namespace
}  // namespace tidal
