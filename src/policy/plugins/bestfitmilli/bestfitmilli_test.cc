#include "policy/plugins/bestfitmilli/bestfitmilli.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace tidal {
namespace {

using namespace tidal::testing;

TEST(BestFitMilli, TightestNodeWins) {
  struct Case {
    const char* name;
    std::int64_t cpu_left;
    std::vector<int> free;
    double want;
  };
  // Pod: 8000 milli-CPU, one whole GPU.
  const Case cases[] = {
      // ½·56000/128000 + ½·3000/8000 = 0.40625: trunc(59.375).
      {"half-free node", 64000, {1000, 1000, 1000, 1000, 0, 0, 0, 0}, 59},
      {"exact fit", 8000, {1000}, 100},
      // ½·120000/128000 + ½·7000/8000 = 0.90625.
      {"idle big node", 128000, {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 9},
      {"does not fit", 4000, {1000}, 0},
  };
  BestFitMilli plugin;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const NodeState node =
        NodeBuilder("n").MilliFree(tc.free).Resources(tc.cpu_left, 64 * kGi).Build();
    const PodDemand pod = PodBuilder().Milli(1, 1000).Requests(8000, 0).Build();
    EXPECT_DOUBLE_EQ(plugin.ScoreOne(Cycle(DefaultPolicyConfig(), pod), node, {}), tc.want);
  }
}

TEST(BestFitMilli, TakesNoArgs) {
  ConfigErrors errors;
  EXPECT_EQ(NewBestFitMilli(YAML::Load("{x: 1}"), "p", errors), nullptr);
  EXPECT_EQ(errors.items(), std::vector<std::string>{"p: bestfitmilli takes no args"});
}

}  // namespace
}  // namespace tidal
