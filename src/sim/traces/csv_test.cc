#include "tidal/sim/traces/csv.h"

#include <gtest/gtest.h>

#include <functional>

#include "tidal/core/status.h"

namespace tidal::sim::traces {
namespace {

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.message;
  }
  return "";
}

TEST(Csv, SplitsLinesAndKeepsPositions) {
  const Csv csv = Csv::FromText("t.csv", "a,b,c\r\n1,,33\n\n4,5,6\n\n");
  ASSERT_EQ(csv.header(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(csv.lines().size(), 2u);  // empty lines skipped
  const CsvLine& l = csv.lines()[0];
  EXPECT_EQ(l.line, 2);
  EXPECT_EQ(l.fields, (std::vector<std::string_view>{"1", "", "33"}));
  EXPECT_EQ(l.columns, (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(csv.lines()[1].line, 4);
  EXPECT_EQ(csv.Find("c"), 2);
  EXPECT_EQ(csv.Find("d"), -1);
}

TEST(Csv, StructuralErrorsNameTheInput) {
  struct Case {
    const char* name;
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"empty file", "", "t.csv:1:1: empty file (expected a CSV header line)"},
      {"header after blank line", "\na,b\n", "t.csv:2:1: expected the header line first"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(ErrorOf([&] { Csv::FromText("t.csv", tc.text); }), tc.want);
  }
  const Csv csv = Csv::FromText("t.csv", "a,b\n");
  EXPECT_EQ(ErrorOf([&] { csv.Require("zz"); }),
            "t.csv:1:1: missing column \"zz\" (header is \"a,b\")");
  EXPECT_EQ(ErrorOf([] { Csv::ReadFile("/nonexistent/x.csv"); }),
            "/nonexistent/x.csv: cannot open: No such file or directory");
}

TEST(FieldReader, TypedReadsReportLineColumnAndExpectation) {
  struct Case {
    const char* name;
    const char* row;
    const char* want;  // "" = fine
  };
  const Case cases[] = {
      {"good", "7,2.5,x", ""},
      {"decimal integer", "7.0,2.5,x", ""},
      {"not a number", "7,abc,x", "t.csv:2:3: f: \"abc\" is not a finite number (expected ratio)"},
      {"int out of range", "70,1,x", "t.csv:2:1: n: 70 is out of range (expected count, 0 to 10)"},
      {"fractional int", "7.5,1,x", "t.csv:2:1: n: \"7.5\" is not a whole number (expected count)"},
      {"infinite", "7,inf,x", "t.csv:2:3: f: \"inf\" is not a finite number (expected ratio)"},
      {"empty text", "7,1,", "t.csv:2:5: s: empty (expected a name)"},
      {"too few fields", "7,1", "t.csv:2:1: 2 fields (expected 3, one per header column)"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const Csv csv = Csv::FromText("t.csv", std::string("n,f,s\n") + tc.row + "\n");
    FieldReader r(csv);
    const CsvLine& l = csv.lines()[0];
    if (r.CheckWidth(l)) {
      r.Int(l, 0, "count", 0, 10);
      r.Number(l, 1, "ratio", 0, 10);
      r.NonEmpty(l, 2, "a name");
    }
    EXPECT_EQ(ErrorOf([&] { r.Finish(); }), tc.want);
  }
}

TEST(FieldReader, KeepsTheFirstTenProblemsAndCountsTheRest) {
  std::string text = "n\n";
  for (int i = 0; i < 13; ++i) text += "x\n";
  const Csv csv = Csv::FromText("t.csv", text);
  FieldReader r(csv);
  for (const auto& l : csv.lines()) r.Int(l, 0, "count", 0, 10);
  const std::string msg = ErrorOf([&] { r.Finish(); });
  EXPECT_NE(msg.find("t.csv:11:1: n:"), std::string::npos);
  EXPECT_EQ(msg.find("t.csv:12:1"), std::string::npos);
  EXPECT_NE(msg.find("... and 3 more problems"), std::string::npos);
}

TEST(FieldReader, OptionalNumbers) {
  const Csv csv = Csv::FromText("t.csv", "v\n\nnan\n3\n");
  FieldReader r(csv);
  ASSERT_EQ(csv.lines().size(), 2u);
  EXPECT_FALSE(r.OptionalNumber(csv.lines()[0], 0, "s", 0, 9).has_value());
  EXPECT_EQ(r.OptionalNumber(csv.lines()[1], 0, "s", 0, 9), 3.0);
  EXPECT_TRUE(r.ok());
}

}  // namespace
}  // namespace tidal::sim::traces
