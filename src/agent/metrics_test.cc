#include "tidal/agent/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <locale>
#include <sstream>

#include "agent/exposition_check.h"
#include "tidal/core/text.h"

namespace tidal::agent {
namespace {

struct EscapeCase {
  const char* name;
  std::string in;
  std::string label_out;
  std::string help_out;
};

class EscapeCases : public ::testing::TestWithParam<EscapeCase> {};

TEST_P(EscapeCases, EscapesPerTextFormat) {
  EXPECT_EQ(EscapeLabelValue(GetParam().in), GetParam().label_out);
  EXPECT_EQ(EscapeHelp(GetParam().in), GetParam().help_out);
}

INSTANTIATE_TEST_SUITE_P(Cases, EscapeCases,
                         ::testing::Values(EscapeCase{"Plain", "NVIDIA H100 80GB HBM3",
                                                      "NVIDIA H100 80GB HBM3",
                                                      "NVIDIA H100 80GB HBM3"},
                                           EscapeCase{"Backslash", "a\\b", "a\\\\b", "a\\\\b"},
                                           EscapeCase{"Quote_only_in_labels", "say \"hi\"",
                                                      "say \\\"hi\\\"", "say \"hi\""},
                                           EscapeCase{"Newline", "a\nb", "a\\nb", "a\\nb"},
                                           EscapeCase{"Utf8_passes_through", "disk \xC3\xA9",
                                                      "disk \xC3\xA9", "disk \xC3\xA9"}),
                         [](const auto& p) { return std::string(p.param.name); });

// Label values must be UTF-8 or Prometheus refuses the whole scrape: each
// maximal subpart of an ill-formed sequence (Unicode §3.9) becomes one U+FFFD.
struct Utf8Case {
  const char* name;
  std::string in;
  std::string label_out;  // EscapeLabelValue's
  bool repaired;
};

class Utf8Cases : public ::testing::TestWithParam<Utf8Case> {};

TEST_P(Utf8Cases, LabelValuesAreValidUtf8) {
  const Utf8Case& c = GetParam();
  bool repaired = false;
  const std::string out = EscapeLabelValue(c.in, &repaired);
  EXPECT_EQ(out, c.label_out);
  EXPECT_EQ(repaired, c.repaired);
  EXPECT_TRUE(IsValidUtf8(out));
  bool raw_repaired = false;
  const std::string raw = RepairUtf8(c.in, &raw_repaired);
  EXPECT_EQ(raw_repaired, c.repaired);
  EXPECT_TRUE(IsValidUtf8(raw));
  if (!c.repaired) {
    EXPECT_EQ(raw, c.in);
  }
}

#define R "\xEF\xBF\xBD"  // U+FFFD
INSTANTIATE_TEST_SUITE_P(
    Cases, Utf8Cases,
    ::testing::Values(Utf8Case{"Ascii", "sda", "sda", false},
                      Utf8Case{"Two_bytes", "disk \xC3\xA9", "disk \xC3\xA9", false},
                      Utf8Case{"Three_bytes", "\xE2\x82\xAC", "\xE2\x82\xAC", false},
                      Utf8Case{"Four_bytes", "\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80", false},
                      Utf8Case{"Largest_code_point", "\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF", false},
                      Utf8Case{"Overlong_two_bytes", "\xC0\xAF", R R, true},
                      Utf8Case{"Overlong_three_bytes", "\xE0\x80\xAF", R R R, true},
                      Utf8Case{"Overlong_four_bytes", "\xF0\x80\x80\xAF", R R R R, true},
                      Utf8Case{"Surrogate",
                               "a\xED\xA0\x80"
                               "b",
                               "a" R R R "b", true},
                      Utf8Case{"Above_10FFFF", "\xF4\x90\x80\x80", R R R R, true},
                      Utf8Case{"Lead_F5", "\xF5\x80", R R, true},
                      Utf8Case{"Truncated_at_the_end", "sd\xE2\x82", "sd" R, true},
                      Utf8Case{"Truncated_four_bytes_before_ascii", "\xF0\x9F\x98x", R "x", true},
                      Utf8Case{"Lone_continuation_bytes",
                               "a\x80\xBF"
                               "b",
                               "a" R R "b", true},
                      Utf8Case{"Bytes_FE_FF", "\xFE\xFF", R R, true},
                      Utf8Case{"Escapes_beside_a_repair", "sd\"\xFF\\", "sd\\\"" R "\\\\", true},
                      Utf8Case{"Valid_after_invalid", "\xFF\xC3\xA9", R "\xC3\xA9", true}),
    [](const auto& p) { return std::string(p.param.name); });
#undef R

struct ValueCase {
  const char* name;
  double v;
  const char* out;
};

class ValueCases : public ::testing::TestWithParam<ValueCase> {};

TEST_P(ValueCases, FormatsLikeGo) {
  std::string s;
  AppendValue(GetParam().v, &s);
  EXPECT_EQ(s, GetParam().out);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ValueCases,
    ::testing::Values(ValueCase{"Zero", 0.0, "0"}, ValueCase{"Integer", 42, "42"},
                      ValueCase{"Bytes_exact", 85899345920.0, "85899345920"},
                      ValueCase{"Fraction", 0.25, "0.25"},
                      ValueCase{"Shortest_round_trip", 0.1, "0.1"},
                      ValueCase{"Negative", -1.5, "-1.5"},
                      ValueCase{"NaN", std::numeric_limits<double>::quiet_NaN(), "NaN"},
                      ValueCase{"Plus_inf", std::numeric_limits<double>::infinity(), "+Inf"},
                      ValueCase{"Minus_inf", -std::numeric_limits<double>::infinity(), "-Inf"}),
    [](const auto& p) { return std::string(p.param.name); });

// A facet that makes iostreams print "0,25": what a de_DE locale would do.
struct CommaDecimal : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
};

TEST(SerializeText, ReportsEachRepairedLabel) {
  MetricSet set("n\xFF");
  set.Declare("x_bytes", "help");
  set.Add("x_bytes", {{"device", "sd\xC0"}}, 1);
  set.Add("x_bytes", {{"device", "sda"}}, 2);
  std::vector<std::string> repaired;
  const std::string text = SerializeText(set.families(), &repaired);
  EXPECT_TRUE(IsValidUtf8(text)) << text;
  EXPECT_NE(text.find("x_bytes{node=\"n\xEF\xBF\xBD\",device=\"sd\xEF\xBF\xBD\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(repaired,
            (std::vector<std::string>{R"(node="n\xff")", R"(device="sd\xc0")", R"(node="n\xff")"}));
}

TEST(SerializeText, IgnoresACommaDecimalGlobalLocale) {
  const std::locale old =
      std::locale::global(std::locale(std::locale::classic(), new CommaDecimal));
  std::ostringstream probe;
  probe << 0.25;
  MetricSet set("n1");
  set.Declare("x_ratio", "help");
  set.Add("x_ratio", {}, 0.25);
  const std::string text = SerializeText(set.families());
  std::locale::global(old);
  ASSERT_EQ(probe.str(), "0,25") << "the facet did not take effect; the test proves nothing";
  EXPECT_NE(text.find("x_ratio{node=\"n1\"} 0.25\n"), std::string::npos) << text;
}

TEST(SerializeText, WritesHelpTypeAndNodeLabelFirst) {
  MetricSet set("gpu-node-1");
  set.Declare("ai_gpu_memory_used_bytes", "Used\nbytes");
  set.Add("ai_gpu_memory_used_bytes", {{"gpu_id", "0"}, {"model", "A \"big\" one"}}, 1024);
  EXPECT_EQ(SerializeText(set.families()),
            "# HELP ai_gpu_memory_used_bytes Used\\nbytes\n"
            "# TYPE ai_gpu_memory_used_bytes gauge\n"
            "ai_gpu_memory_used_bytes{node=\"gpu-node-1\",gpu_id=\"0\",model=\"A \\\"big\\\" "
            "one\"} 1024\n");
}

TEST(SerializeText, FamilyWithoutSamplesIsLeftOut) {
  MetricSet set("n");
  set.Declare("empty_family", "never filled");
  set.Declare("full_family", "filled");
  set.Add("full_family", {}, 1);
  const std::string text = SerializeText(set.families());
  EXPECT_EQ(text.find("empty_family"), std::string::npos);
  EXPECT_NE(text.find("full_family"), std::string::npos);
}

TEST(SerializeText, InterleavedAddsFromTwoCollectorsStayOneGroup) {
  MetricSet set("n");
  set.Declare("a_metric", "a");
  set.Declare("b_metric", "b");
  set.Add("a_metric", {{"k", "1"}}, 1);
  set.Add("b_metric", {{"k", "1"}}, 1);
  set.Declare("a_metric", "declared again by a second collector");
  set.Add("a_metric", {{"k", "2"}}, 2);
  const std::string text = SerializeText(set.families());
  EXPECT_EQ(testing::CheckExposition(text), "") << text;
  EXPECT_NE(text.find("# HELP a_metric a\n"), std::string::npos);
}

struct CheckCase {
  const char* name;
  const char* text;
  bool ok;
};

class CheckExpositionCases : public ::testing::TestWithParam<CheckCase> {};

// The checker itself must be able to fail, or the tests using it prove nothing.
TEST_P(CheckExpositionCases, DetectsBrokenGroups) {
  EXPECT_EQ(testing::CheckExposition(GetParam().text).empty(), GetParam().ok);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckExpositionCases,
    ::testing::Values(
        CheckCase{"Good", "# HELP a x\n# TYPE a gauge\na 1\n# HELP b y\n# TYPE b gauge\nb 2\n",
                  true},
        CheckCase{"Split_family",
                  "# HELP a x\n# TYPE a gauge\na{k=\"1\"} 1\n# HELP b y\n# TYPE b gauge\nb 2\n"
                  "a{k=\"2\"} 1\n",
                  false},
        CheckCase{"Missing_type", "# HELP a x\na 1\n", false},
        CheckCase{"Duplicate_series", "# HELP a x\n# TYPE a gauge\na 1\na 2\n", false},
        CheckCase{"No_final_newline", "# HELP a x\n# TYPE a gauge\na 1", false}),
    [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace tidal::agent
