// The two-tier reservation overlay against its plain reference: a whole
// overlay made afresh from the book after every change.
#include "tidal/extender/inflight.h"

#include <gtest/gtest.h>

#include <random>

namespace tidal::extender {
namespace {

constexpr Bytes kGi = Bytes{1} << 30;

std::shared_ptr<const NodeMap> Nodes(int count) {
  auto nodes = std::make_shared<NodeMap>();
  for (int i = 0; i < count; ++i) {
    NodeState n;
    n.name = "n" + std::to_string(i);
    for (int g = 0; g < 4; ++g) {
      Gpu gpu;
      gpu.index = g;
      gpu.memory_total = 24 * kGi;
      gpu.memory_used = kGi;
      gpu.free_slots = 2;
      n.gpus.push_back(gpu);
    }
    n.allocatable_gpus = 8;
    n.metrics_known = true;
    n.Finalize();
    nodes->emplace(n.name, std::move(n));
  }
  return nodes;
}

Reservation Placed(const std::string& pod, const std::string& node, int gpu) {
  Reservation r;
  r.pod = pod;
  r.node = node;
  r.gpus.Add(gpu);
  r.gpu_count = 1;
  r.memory_per_gpu = 3 * kGi;
  r.placed_at_ms = 1'000;
  return r;
}

// What a request reads for `name` from the overlay (recent, reserved, base).
const NodeState* Read(const InFlight::Overlaid& o, const NodeMap& base, const std::string& name) {
  for (const ReservedMap* tier : {o.recent.get(), o.reserved.get()})
    if (const auto it = tier->find(name); it != tier->end()) return it->second.get();
  const auto it = base.find(name);
  return it == base.end() ? nullptr : &it->second;
}

void ExpectSameAsWhole(const InFlight& inflight, const std::shared_ptr<const NodeMap>& base,
                       const InFlight::Overlaid& incremental) {
  const InFlight::Overlaid whole = inflight.Overlay(base, 0);
  EXPECT_TRUE(whole.recent->empty());
  for (const auto& [name, node] : *base) {
    const NodeState* a = Read(incremental, *base, name);
    const NodeState* b = Read(whole, *base, name);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(a->gpus.size(), b->gpus.size()) << name;
    for (std::size_t g = 0; g < a->gpus.size(); ++g) {
      EXPECT_EQ(a->gpus[g].memory_used, b->gpus[g].memory_used) << name << " GPU " << g;
      EXPECT_EQ(a->gpus[g].free_slots, b->gpus[g].free_slots) << name << " GPU " << g;
    }
    EXPECT_EQ(a->gpus_requested, b->gpus_requested) << name;
  }
}

TEST(InFlightOverlay, IncrementalMatchesAWholeOverlayAfterEveryChange) {
  struct Case {
    const char* name;
    int nodes, steps;
    double remove_share;
  };
  const Case cases[] = {
      {"a few nodes, mostly adds", 4, 200, 0.2},
      {"many nodes, a burst", 300, 1500, 0.1},
      {"churn: as many removes as adds", 50, 1000, 0.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto base = Nodes(c.nodes);
    InFlight inflight(ReservationOptions{}, 2);
    InFlight::Overlaid overlay = inflight.Overlay(base, 0);
    std::mt19937 rng(7);
    std::vector<std::string> placed;
    for (int step = 0; step < c.steps; ++step) {
      if (!placed.empty() && std::uniform_real_distribution<>(0, 1)(rng) < c.remove_share) {
        const std::size_t k = rng() % placed.size();
        ASSERT_TRUE(inflight.Remove(placed[k]));
        placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        const std::string pod = "p" + std::to_string(step);
        inflight.Add(Placed(pod, "n" + std::to_string(rng() % c.nodes), int(rng() % 4)));
        placed.push_back(pod);
      }
      overlay = inflight.Overlay(base, 0, &overlay);
      ASSERT_EQ(overlay.generation, inflight.generation());
      if (step % 97 == 0) ExpectSameAsWhole(inflight, base, overlay);
    }
    ExpectSameAsWhole(inflight, base, overlay);
  }
}

// A bind in a burst makes its node again and shares the larger tier: the work
// does not grow with the nodes already reserved.
TEST(InFlightOverlay, ABindSharesTheLargerTierAndKeepsTheRecentOneSmall) {
  const auto base = Nodes(2000);
  InFlight inflight(ReservationOptions{}, 2);
  for (int i = 0; i < 1600; ++i)
    inflight.Add(Placed("warm" + std::to_string(i), "n" + std::to_string(i), 0));
  InFlight::Overlaid overlay = inflight.Overlay(base, 0);
  ASSERT_EQ(overlay.reserved->size(), 1600u);
  int folds = 0;
  for (int i = 0; i < 200; ++i) {
    inflight.Add(Placed("burst" + std::to_string(i), "n" + std::to_string(1600 + i), 1));
    const auto larger = overlay.reserved;
    overlay = inflight.Overlay(base, 0, &overlay);
    folds += overlay.reserved != larger ? 1 : 0;
    EXPECT_LE(overlay.recent->size(), 43u);  // the fold point: √1 800, rounded up
  }
  EXPECT_GE(folds, 4);
  EXPECT_LE(folds, 6);
}

// A node whose last reservation ends reads as its base node again, although the
// larger tier still holds it.
TEST(InFlightOverlay, AnEndedReservationShowsTheBaseNode) {
  const auto base = Nodes(3);
  InFlight inflight(ReservationOptions{}, 2);
  inflight.Add(Placed("p", "n1", 2));
  InFlight::Overlaid overlay = inflight.Overlay(base, 0);
  ASSERT_EQ(overlay.reserved->count("n1"), 1u);
  EXPECT_EQ(Read(overlay, *base, "n1")->gpus[2].memory_used, 4 * kGi);
  ASSERT_TRUE(inflight.Remove("p"));
  overlay = inflight.Overlay(base, 0, &overlay);
  EXPECT_EQ(Read(overlay, *base, "n1"), &base->at("n1"));
}

}  // namespace
}  // namespace tidal::extender
