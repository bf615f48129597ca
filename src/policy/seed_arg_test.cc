#include "tidal/policy/seed_arg.h"

#include <gtest/gtest.h>

namespace tidal::yamlutil {
namespace {

// The simulators pass their 64-bit seeds (--seed, --seeds) as this arg: any of
// 0..2^64−1 is taken as written, anything else is reported.
TEST(SeedArg, TakesAny64BitSeed) {
  struct Case {
    const char* name;
    const char* yaml;
    std::uint64_t want;  // when `error` is empty
    std::string error;
  };
  constexpr std::uint64_t kUntouched = 7;
  const std::string range = "p.seed: expected an integer in 0..18446744073709551615";
  const Case cases[] = {
      {"absent: untouched", "{}", kUntouched, ""},
      {"null: untouched", "{seed: ~}", kUntouched, ""},
      {"zero", "{seed: 0}", 0, ""},
      {"past 32 bits", "{seed: 4294967296}", 4294967296ULL, ""},
      {"largest", "{seed: 18446744073709551615}", 18446744073709551615ULL, ""},
      {"negative", "{seed: -1}", 0, "p.seed: -1 (expected a number >= 0)"},
      {"past 64 bits", "{seed: 18446744073709551616}", 0, range},
      {"fraction", "{seed: 1.5}", 0, range},
      {"exponent", "{seed: 1e3}", 0, range},
      {"text", "{seed: abc}", 0, range},
      {"list", "{seed: [1]}", 0, range},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ConfigErrors errors;
    std::uint64_t seed = kUntouched;
    ReadSeed(YAML::Load(tc.yaml), "p", "seed", &seed, errors);
    if (tc.error.empty()) {
      EXPECT_TRUE(errors.empty());
      EXPECT_EQ(seed, tc.want);
    } else {
      EXPECT_EQ(errors.items(), std::vector<std::string>{tc.error});
      EXPECT_EQ(seed, kUntouched) << "a bad seed leaves the default";
    }
  }
}

}  // namespace
}  // namespace tidal::yamlutil
