#include "tidal/agent/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <locale>
#include <sstream>

#include "agent/exposition_check.h"

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
