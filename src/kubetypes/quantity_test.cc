#include "tidal/kubetypes/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace tidal {
namespace {

constexpr std::int64_t kKi = std::int64_t{1} << 10;
constexpr std::int64_t kMi = std::int64_t{1} << 20;
constexpr std::int64_t kGi = std::int64_t{1} << 30;
constexpr std::int64_t kTi = std::int64_t{1} << 40;
constexpr std::int64_t kPi = std::int64_t{1} << 50;
constexpr std::int64_t kEi = std::int64_t{1} << 60;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

struct ValidCase {
  const char* name;
  const char* text;
  std::int64_t value;
  bool rounded;
};

TEST(ParseQuantity, Valid) {
  const ValidCase cases[] = {
      {"zero", "0", 0, false},
      {"plain", "42", 42, false},
      {"plus_sign", "+42", 42, false},
      {"leading_zeros", "0007", 7, false},
      {"negative", "-5", -5, false},
      {"negative_zero", "-0", 0, false},
      {"zero_with_suffix", "0Gi", 0, false},
      {"zero_fraction", "0.000", 0, false},
      {"Ki", "1Ki", kKi, false},
      {"Mi", "12544Mi", 12544 * kMi, false},
      {"Gi", "16Gi", 16 * kGi, false},
      {"Ti", "2Ti", 2 * kTi, false},
      {"Pi", "3Pi", 3 * kPi, false},
      {"Ei", "7Ei", 7 * kEi, false},
      {"half_Gi", "0.5Gi", std::int64_t{1} << 29, false},
      {"leading_point", ".5Gi", std::int64_t{1} << 29, false},
      {"trailing_point", "5.", 5, false},
      {"trailing_point_suffix", "5.Gi", 5 * kGi, false},
      {"one_and_half_Gi", "1.5Gi", 3 * (std::int64_t{1} << 29), false},
      {"fraction_of_Ki_rounds_up", "0.001Ki", 2, true},  // 1.024
      {"k", "2k", 2000, false},
      {"M", "3M", 3'000'000, false},
      {"G", "1.5G", 1'500'000'000, false},
      {"T", "1T", 1'000'000'000'000, false},
      {"P", "1P", 1'000'000'000'000'000, false},
      {"E_is_exa", "2E", 2'000'000'000'000'000'000, false},
      {"milli_rounds_up", "500m", 1, true},
      {"milli_exact", "2000m", 2, false},
      {"micro", "1u", 1, true},
      {"nano", "1n", 1, true},
      {"fraction_rounds_up", "1.2", 2, true},
      {"tiny_rounds_up", "0.0000000000000000000000000000001", 1, true},
      {"negative_rounds_away_from_zero", "-1.5", -2, true},
      {"exponent", "1e3", 1000, false},
      {"exponent_upper", "1E3", 1000, false},
      {"exponent_plus", "2e+3", 2000, false},
      {"exponent_negative", "1500e-3", 2, true},
      {"exponent_negative_exact", "2000e-3", 2, false},
      {"exponent_fraction_mantissa", "1.5e3", 1500, false},
      {"exponent_huge_negative", "5e-999999999999", 1, true},
      {"zero_huge_exponent", "0e999999999999", 0, false},
      {"many_digits_exact", "1.000000000000000000000000000000e3", 1000, false},
      {"near_one_rounds_up", "0.99999999999999999999", 1, true},
      {"int64_max", "9223372036854775807", kMax, false},
      {"int64_max_exponent", "9223372036854775807e0", kMax, false},
      {"int64_max_milli", "9223372036854775807000m", kMax, false},
      {"below_max_rounds_up", "9223372036854775806.5", kMax, true},
      {"max_Ei", "7.99999999999999999913Ei", kMax, true},
  };
  for (const ValidCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string error;
    bool rounded = !c.rounded;
    auto v = ParseQuantityRounded(c.text, "f", &error, &rounded);
    ASSERT_TRUE(v.has_value()) << error;
    EXPECT_EQ(*v, c.value);
    EXPECT_EQ(rounded, c.rounded);
    EXPECT_EQ(ParseQuantity(c.text, "f", &error), c.value);
  }
}

struct MilliCase {
  const char* name;
  const char* text;
  std::int64_t milli;
};

TEST(ParseQuantityMilli, Values) {
  const MilliCase cases[] = {
      {"milli", "500m", 500},
      {"whole", "2", 2000},
      {"decimal", "0.25", 250},
      {"rounds_up", "0.0001", 1},
      {"rounds_up_1", "100.1m", 101},
      {"micro", "1500u", 2},
      {"nano_exact", "1000000n", 1},
      {"k", "1k", 1'000'000},
      {"Ki", "1Ki", 1'024'000},
      {"exponent", "1e-3", 1},
      {"negative", "-250m", -250},
      {"zero", "0m", 0},
      {"max", "9223372036854775.807", kMax},
  };
  for (const MilliCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string error;
    auto v = ParseQuantityMilli(c.text, "f", &error);
    ASSERT_TRUE(v.has_value()) << error;
    EXPECT_EQ(*v, c.milli);
  }
}

struct InvalidCase {
  const char* name;
  std::string text;
  const char* message_part;
};

TEST(ParseQuantity, Invalid) {
  const char* kNot = "is not a quantity (expected a number with an optional suffix";
  const InvalidCase cases[] = {
      {"empty", "", kNot},
      {"space", " ", kNot},
      {"leading_space", " 1", kNot},
      {"trailing_space", "1 ", kNot},
      {"inner_space", "1 Gi", kNot},
      {"two_points", "1.2.3", kNot},
      {"point_only", ".", kNot},
      {"sign_only", "-", kNot},
      {"suffix_only", "Gi", kNot},
      {"point_suffix", ".Gi", kNot},
      {"GB", "12GB", kNot},
      {"lowercase_gi", "1gi", kNot},
      {"uppercase_K", "1K", kNot},
      {"Kib", "1Kib", kNot},
      {"bare_e", "1e", kNot},
      {"e_sign_only", "1e-", kNot},
      {"e_fraction", "1e3.5", kNot},
      {"e_then_suffix", "1e3Gi", kNot},
      {"double_sign", "--1", kNot},
      {"plus_minus", "+-1", kNot},
      {"NaN", "NaN", kNot},
      {"nan", "nan", kNot},
      {"inf", "inf", kNot},
      {"Infinity", "-Infinity", kNot},
      {"hex", "0x10", kNot},
      {"comma", "0,5", kNot},
      {"trailing_garbage", "16Gix", kNot},
      {"two_suffixes", "1kM", kNot},
      {"nul_byte", std::string("1\0", 2), kNot},
      {"too_long", std::string(300, '1'), "too long"},
      {"overflow", "9223372036854775808", "too large"},
      {"overflow_Ei", "8Ei", "too large"},
      {"overflow_exponent", "1e19", "too large"},
      {"overflow_huge_exponent", "1e999999999999999999999", "too large"},
      {"overflow_negative", "-9223372036854775808", "too large"},
      {"overflow_digits", "123456789012345678901234567890", "too large"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string error;
    EXPECT_FALSE(ParseQuantity(c.text, "resources.limits[\"nvidia.com/gpu\"]", &error));
    EXPECT_NE(error.find(c.message_part), std::string::npos) << error;
    EXPECT_EQ(error.rfind("resources.limits[\"nvidia.com/gpu\"]: ", 0), 0u) << error;
    EXPECT_FALSE(ParseQuantityMilli(c.text, "f", &error));
  }
}

TEST(ParseQuantity, MessageNamesFieldAndValue) {
  std::string error;
  EXPECT_FALSE(ParseQuantity("abc", "resources.limits[\"nvidia.com/gpu\"]", &error));
  EXPECT_EQ(error,
            "resources.limits[\"nvidia.com/gpu\"]: \"abc\" is not a quantity (expected a number "
            "with an optional suffix such as 16Gi, 500m, 1e3)");
  // Without a field the message starts at the value; quotes and control bytes are escaped.
  EXPECT_FALSE(ParseQuantity("a\"b\n", "", &error));
  EXPECT_EQ(error.rfind("\"a\\\"b\\x0a\" is not a quantity", 0), 0u) << error;
  // A null error pointer is allowed.
  EXPECT_FALSE(ParseQuantity("x", "f", nullptr));
  // Long values are shortened in the message.
  EXPECT_FALSE(ParseQuantity(std::string(200, 'x'), "f", &error));
  EXPECT_LT(error.size(), 200u);
}

TEST(ParseQuantity, MilliOverflow) {
  std::string error;
  // Fits as a value but not in thousandths.
  EXPECT_TRUE(ParseQuantity("9223372036854775807", "f", &error));
  EXPECT_FALSE(ParseQuantityMilli("9223372036854775807", "cpu", &error));
  EXPECT_NE(error.find("cpu: \"9223372036854775807\" is too large"), std::string::npos) << error;
  EXPECT_FALSE(ParseQuantityMilli("9223372036854775.808", "cpu", &error));
}

struct FormatCase {
  const char* name;
  std::int64_t bytes;
  const char* text;
};

TEST(FormatBytes, Values) {
  const FormatCase cases[] = {
      {"zero", 0, "0"},
      {"small", 512, "512"},
      {"not_multiple_small", 1000, "1000"},
      {"Ki", kKi, "1Ki"},
      {"Gi", 24 * kGi, "24Gi"},
      {"Mi_not_Gi", 12544 * kMi, "12544Mi"},
      {"Ei", 3 * kEi, "3Ei"},
      {"Ki_multiple", 3 * kKi, "3Ki"},
      {"one_and_half_Ki_not_exact", 1537, "1.5Ki"},
      {"one_and_half_Gi", 3 * (kGi / 2) + 1, "1.5Gi"},
      {"rounds_to_next_suffix", kMi - 1, "1.0Mi"},
      {"one_decimal_rounding", 2 * kGi - kGi / 20 + 7, "2.0Gi"},
      {"max", kMax, "8.0Ei"},
      {"negative", -24 * kGi, "-24Gi"},
      {"min", std::numeric_limits<std::int64_t>::min(), "-8Ei"},
  };
  for (const FormatCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatBytes(c.bytes), c.text);
  }
}

TEST(FormatBytes, RoundTripsExactValues) {
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{512}, 3 * kKi, 12544 * kMi, 24 * kGi, 5 * kTi, 7 * kEi}) {
    SCOPED_TRACE(v);
    std::string error;
    EXPECT_EQ(ParseQuantity(FormatBytes(v), "f", &error), v) << error;
  }
}

TEST(FormatBytesExact, AlwaysParsesBackToTheSameValue) {
  struct Case {
    const char* name;
    std::int64_t bytes;
    const char* text;
  };
  const Case cases[] = {
      {"whole GiB keeps the unit", 24 * kGi, "24Gi"},
      {"below a KiB is plain", 1000, "1000"},
      {"one byte over a KiB is not rounded to 1.0Ki", 1025, "1025"},
      {"a fractional GiB takes the largest exact unit", 3 * kGi / 2, "1536Mi"},
      {"no exact unit is plain", 3 * kGi / 2 + 1, "1610612737"},
      // Found by fuzz_quantity: FormatBytes shows "8.0Ei", which does not fit in int64.
      {"the largest value is plain", std::numeric_limits<std::int64_t>::max(),
       "9223372036854775807"},
      {"negative whole units keep the unit", -2 * kMi, "-2Mi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatBytesExact(c.bytes), c.text);
    std::string error;
    EXPECT_EQ(ParseQuantity(FormatBytesExact(c.bytes), "f", &error), c.bytes) << error;
  }
}

}  // namespace
}  // namespace tidal
