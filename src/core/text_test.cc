#include "tidal/core/text.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tidal {
namespace {

TEST(Text, IsValidUtf8) {
  struct Case {
    const char* name;
    std::string text;
    bool want;
  };
  const Case cases[] = {
      {"empty", "", true},
      {"ascii", "/var/lib/tidal/memory.json", true},
      {"two bytes", "m\xc3\xa9moire", true},
      {"three bytes", "\xe6\x98\xbe\xe5\xad\x98", true},
      {"four bytes", "\xf0\x9f\x9a\x80", true},
      {"highest code point", "\xf4\x8f\xbf\xbf", true},
      {"nul is ascii", std::string("a\0b", 3), true},
      {"lone continuation", "a\x80", false},
      {"0xff", "\xff", false},
      {"overlong slash", "\xc0\xaf", false},
      {"overlong three bytes", "\xe0\x80\xaf", false},
      {"overlong four bytes", "\xf0\x80\x80\xaf", false},
      {"surrogate", "\xed\xa0\x80", false},
      {"above U+10FFFF", "\xf4\x90\x80\x80", false},
      {"lead 0xf5", "\xf5\x80\x80\x80", false},
      {"truncated at end", "ok\xe6\x98", false},
      {"bad third byte", "\xe6\x98x", false},
      {"bad fourth byte", "\xf0\x9f\x9a(", false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(IsValidUtf8(tc.text), tc.want);
  }
}

TEST(Text, FormatShortestReadsBackExactly) {
  struct Case {
    const char* name;
    double v;
    const char* want;
  };
  const Case cases[] = {
      {"a config fraction", 0.7, "0.7"},
      {"an integer", 42, "42"},
      {"negative", -1.5, "-1.5"},
      {"small", 1e-5, "1e-05"},
      {"arithmetic noise is kept: it is the value", 0.1 + 0.2, "0.30000000000000004"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(FormatShortest(tc.v), tc.want);
  }
}

// What each prints as afterwards: the point of rounding.
TEST(Text, RoundingGivesTheDoubleOfTheShortDecimal) {
  struct Case {
    const char* name;
    double rounded;
    const char* want;
  };
  const Case cases[] = {
      {"a percent rounded, then divided by 100", RoundDecimals(19.01 / 100, 4), "0.1901"},
      {"four decimals", RoundDecimals(0.60420000000000007, 4), "0.6042"},
      {"two decimals", RoundDecimals(73.333333333, 2), "73.33"},
      {"fewer decimals than asked", RoundDecimals(0.25, 4), "0.25"},
      {"zero decimals", RoundDecimals(41.6, 0), "42"},
      {"reject minus a margin", RoundSignificant(0.85 - 0.03, 9), "0.82"},
      {"another", RoundSignificant(0.85 - 0.2, 9), "0.65"},
      {"a third to nine digits", RoundSignificant(1.0 / 3, 9), "0.333333333"},
      {"large", RoundSignificant(123456789012.0, 9), "123456789000"},
      {"small", RoundSignificant(3e-12 + 1e-28, 9), "3e-12"},
      {"negative", RoundSignificant(-(0.85 - 0.03), 9), "-0.82"},
      {"infinity is left alone", RoundDecimals(std::numeric_limits<double>::infinity(), 2), "inf"},
      {"NaN is left alone", RoundSignificant(std::numeric_limits<double>::quiet_NaN(), 9), "nan"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(FormatShortest(tc.rounded), tc.want);
  }
}

TEST(Text, EqualsIgnoreCase) {
  struct Case {
    const char* name;
    std::string_view a, b;
    bool want;
  };
  const Case cases[] = {
      {"same", "NodeNames", "NodeNames", true},
      {"other case", "NodeNames", "nodenames", true},
      {"both mixed", "tRuE", "TrUe", true},
      {"empty", "", "", true},
      {"longer", "pods", "pod", false},
      {"other letter", "pod", "pot", false},
      {"non-letters are not folded", "@", "`", false},
      {"bytes above ASCII are not folded", "\xc3\x84", "\xc3\xa4", false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(EqualsIgnoreCase(tc.a, tc.b), tc.want);
  }
}

TEST(Text, StringListKeepsEachStringAndSurvivesACopy) {
  StringList list;
  const std::vector<std::string> want = {"gpu-node-1", "", "ノード", std::string("a\0b", 3)};
  for (int round = 0; round < 2; ++round) {  // a cleared list is reused
    list.clear();
    for (const auto& s : want) list.push_back(s);
    ASSERT_EQ(list.size(), want.size());
    EXPECT_EQ(list.Strings(), want);
  }
  const StringList copy = list;
  list.clear();
  list.push_back("overwritten");
  EXPECT_EQ(copy.Strings(), want);
  EXPECT_EQ(copy[2], "ノード");
  EXPECT_EQ(copy.bytes(), std::string("gpu-node-1ノードa\0b", 22));
}

// A copy (assigned or constructed) holds only the strings, and grows like the original.
TEST(Text, StringListCopiesGrowAsTheOriginal) {
  StringList list;
  std::vector<std::string> want;
  for (int i = 0; i < 100; ++i) {
    want.push_back("node-" + std::to_string(i));
    list.push_back(want.back());
  }
  StringList assigned;
  assigned.push_back("stale");
  assigned = list;
  StringList constructed(list);
  for (StringList* copy : {&assigned, &constructed}) {
    EXPECT_EQ(copy->Strings(), want);
    copy->push_back(std::string(300, 'x'));  // beyond the bytes copied
    EXPECT_EQ((*copy)[100], std::string(300, 'x'));
    EXPECT_EQ((*copy)[99], "node-99");
  }
  std::vector<std::string_view> views(list.size());
  list.Views(views.data());
  EXPECT_EQ(std::vector<std::string>(views.begin(), views.end()), want);
  const StringList& itself = assigned;
  assigned = itself;  // assigned to itself: keeps its strings
  EXPECT_EQ(assigned.size(), 101u);
  EXPECT_EQ(list.Strings(), want);
}

TEST(Text, LinesSplitsAtNewlinesAndCountsFromOne) {
  struct Case {
    const char* name;
    std::string_view text;
    std::vector<std::string_view> want;
  };
  const Case cases[] = {
      {"empty: no line", "", {}},
      {"one line without a newline", "a", {"a"}},
      {"a final newline ends the last line", "a\n", {"a"}},
      {"an empty line in between", "a\n\nb", {"a", "", "b"}},
      {"a newline alone: one empty line", "\n", {""}},
      {"a carriage return stays in the line", "a\r\nb", {"a\r", "b"}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    Lines lines(tc.text);
    std::vector<std::string_view> got;
    for (std::string_view line; lines.Next(&line);) {
      got.push_back(line);
      EXPECT_EQ(lines.number(), static_cast<int>(got.size()));
    }
    EXPECT_EQ(got, tc.want);
    std::string_view after = "untouched";
    EXPECT_FALSE(lines.Next(&after));
    EXPECT_EQ(after, "untouched");
  }
}

}  // namespace
}  // namespace tidal
