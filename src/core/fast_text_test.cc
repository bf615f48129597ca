#include "tidal/core/fast_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

// Each fast writer beside its plain equivalent: fmt for numbers, nlohmann::json
// for JSON strings, memcmp and memcpy for bytes.
namespace tidal {
namespace {

TEST(FastText, SameBytes) {
  struct Case {
    const char* name;
    std::string_view a, b;
    bool want;
  };
  const Case cases[] = {
      {"empty", "", "", true},
      {"short", "abc", "abc", true},
      {"short, other", "abc", "abd", false},
      {"4 to 7, last byte differs", "abcdefg", "abcdefh", false},
      {"8 to 16, middle byte differs", "gpu-node-1234", "gpu-node-1z34", false},
      {"8 to 16, same", "gpu-node-1234", "gpu-node-1234", true},
      {"long, last byte differs", "ip-10-0-12-34.compute.internal",
       "ip-10-0-12-34.compute.internaL", false},
      {"other length", "node", "nodes", false},
      {"embedded NUL", std::string_view("a\0b", 3), std::string_view("a\0c", 3), false},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    EXPECT_EQ(SameBytes(tc.a, tc.b), tc.want);
  }
}

// CopyText copies every size exactly: nothing before or past the copy is written.
TEST(FastText, CopyTextCopiesEverySizeExactly) {
  std::string source;
  for (int i = 0; i < 40; ++i) source.push_back(static_cast<char>('a' + i % 26));
  for (std::size_t n = 0; n <= source.size(); ++n) {
    SCOPED_TRACE(n);
    std::string out(64, '#');
    char* end = CopyText(out.data() + 8,
                         std::string_view(source).substr(3, std::min(n, source.size() - 3)));
    const std::size_t copied = std::min(n, source.size() - 3);
    EXPECT_EQ(end, out.data() + 8 + copied);
    EXPECT_EQ(out, std::string(8, '#') + source.substr(3, copied) + std::string(56 - copied, '#'));
  }
}

// WriteFixed and AppendFixed print what fmt "{:.Nf}" prints: ties (half to
// even), the ends of WriteFixed's range, values past it and non-finite ones; then
// a seeded sweep with exact ties.
TEST(FastText, FixedMatchesFmt) {
  const double inf = std::numeric_limits<double>::infinity();
  const double edges[] = {0,       0.005,
                          0.015,   0.125,
                          0.375,   0.625,
                          0.995,   1,
                          2.5,     3.5,
                          70.05,   70.25,
                          99.95,   1234.5,
                          9.99e12, 1e13 - 1,
                          1e13,    4.5e15,
                          1e200,   1e300,
                          5e-324,  -0.0,
                          -1.5,    inf,
                          -inf,    std::numeric_limits<double>::quiet_NaN()};
  for (const double x : edges) {
    for (int precision = 0; precision <= 3; ++precision) {
      SCOPED_TRACE(fmt::format("{} to {} places", x, precision));
      std::string got;
      AppendFixed(got, x, precision);
      EXPECT_EQ(got, fmt::format("{:.{}f}", x, precision));
    }
  }
  std::mt19937_64 rng(20261205);
  std::uniform_real_distribution<double> any(0, 1e7);
  for (int i = 0; i < 30000; ++i) {
    const double x = any(rng);
    const double tie = static_cast<double>(rng() % 100000) / 8;  // halves, quarters, eighths
    for (const double v : {x, tie}) {
      for (int precision = 0; precision <= 2; ++precision) {
        char buf[kMaxFixedText];
        char* end = WriteFixed(buf, v, precision);
        ASSERT_NE(end, nullptr) << v;
        ASSERT_EQ(std::string(buf, end), fmt::format("{:.{}f}", v, precision)) << v;
      }
    }
  }
}

TEST(FastText, PercentIsTheRoundedWholePercentage) {
  const struct {
    const char* name;
    double fraction;
    const char* want;
  } cases[] = {
      {"half rounds up", 0.865, "87%"},
      {"just below half", 0.8649, "86%"},
      {"whole", 1.0, "100%"},
      {"zero", 0.0, "0%"},
      {"large", 12.345, "1235%"},
      {"infinite", std::numeric_limits<double>::infinity(), "inf%"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::string got;
    AppendPercent(got, tc.fraction);
    EXPECT_EQ(got, tc.want);
    EXPECT_EQ(got, fmt::format("{:.0f}%", std::floor(tc.fraction * 100 + 0.5)));
  }
}

// A message is whole however long its parts: past the stack's room it goes on
// in a string, and reads as fmt writes it.
TEST(FastText, StackMessageIsWholeAtAnyLength) {
  for (std::size_t filler = 0; filler <= 400; filler += 7) {
    SCOPED_TRACE(filler);
    const std::string text(filler, 'x');
    std::string got = "prefix:";
    StackMessage()
        .Text(text)
        .Integer(-9223372036854775807 - 1)
        .Text(" ")
        .Fixed(0.125, 2)
        .Text(" ")
        .Fixed(1e300, 1)
        .Text(" ")
        .Percent(0.995)
        .Written(5, [](char* p) { return std::copy_n("abcde", 5, p); })
        .AppendTo(&got);
    EXPECT_EQ(got, fmt::format("prefix:{}{} {:.2f} {:.1f} {:.0f}%abcde", text,
                               std::numeric_limits<std::int64_t>::min(), 0.125, 1e300, 100.0));
  }
}

// The JSON string of any text reads back as that text, and every escape is
// found wherever it sits in a 16-byte block, an 8-byte word or the tail.
TEST(FastText, JsonStringEscapesAtEveryPosition) {
  struct Case {
    const char* name;
    char c;
    const char* want;  // the escape of c
  };
  const Case cases[] = {
      {"quote", '"', R"(\")"},
      {"backslash", '\\', R"(\\)"},
      {"newline", '\n', R"(\n)"},
      {"tab", '\t', R"(\t)"},
      {"unit separator", '\x1f', R"(\u001f)"},
      {"nul", '\0', R"(\u0000)"},
      {"space is plain", ' ', " "},
      {"DEL is plain", '\x7f', "\x7f"},
      {"UTF-8 byte is plain", '\xc3', "\xc3"},
      {"0x9c is plain", '\x9c', "\x9c"},
      {"0xa2 is plain", '\xa2', "\xa2"},
  };
  for (const Case& tc : cases) {
    for (std::size_t len = 1; len <= 35; ++len) {
      for (std::size_t at = 0; at < len; ++at) {
        SCOPED_TRACE(std::string(tc.name) + " at " + std::to_string(at) + " of " +
                     std::to_string(len));
        std::string text(len, 'x');
        text[at] = tc.c;
        std::string out = "prefix";
        AppendJsonString(text, &out);
        EXPECT_EQ(out, "prefix\"" + text.substr(0, at) + tc.want + text.substr(at + 1) + "\"");
        EXPECT_EQ(JsonStringSize(text), out.size() - 6);
        EXPECT_EQ(IsPlainJson(text), out.size() - 6 == len + 2);
      }
    }
  }
  std::string out;
  AppendJsonString("", &out);
  EXPECT_EQ(out, "\"\"");
  // Every byte value, read back by a plain JSON reader (valid UTF-8 only: the
  // reader checks it).
  std::string ascii;
  for (int c = 0; c < 0x80; ++c) ascii.push_back(static_cast<char>(c));
  std::string literal;
  AppendJsonString(ascii, &literal);
  EXPECT_EQ(nlohmann::json::parse(literal).get<std::string>(), ascii);
}

// A member whose value is written in place is the member a JSON library writes,
// escapes included, whatever the value holds.
TEST(FastText, MemberWrittenInPlaceAsJsonEncodesIt) {
  const struct {
    const char* name;
    std::string run;  // before
    std::string key, value;
  } cases[] = {
      {"first in the run", "", "gpu-node-1", "tidal: loadaware: GPU memory 97% over 95%"},
      {"after others", R"("a":"b")", "n2", "tidal: gpufit: 2 GPUs"},
      {"empty value", "", "n", ""},
      {"a quote and a backslash in the value", "", "n", R"(label "zone" is \x)"},
      {"a control byte in the value", R"("a":"b")", "n", std::string("line\nnext\x01", 10)},
      {"a long value with a late escape", "", "n", std::string(40, 'x') + "\"y"},
      {"a key with escapes", "", "we\"ird", "plain"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = c.run;
    const std::size_t at = OpenJsonMember(c.key, &got);
    got.append(c.value);
    CloseJsonMember(at, &got);
    const std::string want = c.run + (c.run.empty() ? "" : ",") + nlohmann::json(c.key).dump() +
                             ":" + nlohmann::json(c.value).dump();
    EXPECT_EQ(got, want);
    EXPECT_EQ(nlohmann::json::parse("{" + got + "}")[c.key], c.value);
  }
}

}  // namespace
}  // namespace tidal
