#include "tidal/deviceplugin/annotation.h"

#include <gtest/gtest.h>

namespace tidal::deviceplugin {
namespace {

TEST(ParseGpuList, ReadsWhatTheExtenderWritesAndRefusesTheRest) {
  struct Case {
    const char* name;
    std::string text;
    bool ok;
    std::vector<int> gpus;
    std::string reason;  // a part of the error
  };
  const Case cases[] = {
      {"one GPU", "0", true, {0}, ""},
      {"two GPUs in the extender's order", "2,0", true, {2, 0}, ""},
      {"highest index", "63", true, {63}, ""},
      {"empty", "", false, {}, "empty"},
      {"index too large", "64", false, {}, "not below 64"},
      {"three digits", "100", false, {}, "not below 64"},
      {"long number", "99999999999999999999", false, {}, "not below 64"},
      {"leading zero", "01", false, {}, "leading zero"},
      {"repeat", "1,1", false, {}, "GPU 1 named twice"},
      {"space", "0, 1", false, {}, "no GPU index at position 2"},
      {"trailing comma", "0,", false, {}, "no GPU index at position 2"},
      {"leading comma", ",0", false, {}, "no GPU index at position 0"},
      {"not a number", "gpu0", false, {}, "no GPU index at position 0"},
      {"negative", "-1", false, {}, "no GPU index"},
      {"other separator", "0;1", false, {}, "unexpected character at position 1"},
      {"binary is escaped", std::string("0\n\"x", 4), false, {}, "\\x0a\\x22x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<int> gpus{7};
    const Status s = ParseGpuList(c.text, &gpus);
    EXPECT_EQ(s.ok(), c.ok) << s.reason();
    EXPECT_EQ(gpus, c.gpus);
    if (!c.ok) {
      EXPECT_NE(s.reason().find(c.reason), std::string::npos) << s.reason();
      EXPECT_NE(s.reason().find("tidal.io/gpus"), std::string::npos) << s.reason();
      EXPECT_NE(s.reason().find("expected GPU indices"), std::string::npos) << s.reason();
    }
  }
}

TEST(ParseGpuList, LongValuesAreCutInTheReason) {
  std::vector<int> gpus;
  const Status s = ParseGpuList(std::string(100'000, 'x'), &gpus);
  ASSERT_FALSE(s.ok());
  EXPECT_LT(s.reason().size(), 300u);
}

TEST(FormatGpuList, RoundTrips) {
  struct Case {
    const char* name;
    std::vector<int> gpus;
    std::string text;
  };
  const Case cases[] = {{"one", {3}, "3"}, {"several", {0, 2, 5}, "0,2,5"}, {"none", {}, ""}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatGpuList(c.gpus), c.text);
    std::vector<int> back;
    if (!c.gpus.empty()) {
      ASSERT_TRUE(ParseGpuList(c.text, &back).ok());
      EXPECT_EQ(back, c.gpus);
    }
  }
}

}  // namespace
}  // namespace tidal::deviceplugin
