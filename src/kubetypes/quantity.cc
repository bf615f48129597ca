#include "tidal/kubetypes/quantity.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <vector>

#include "tidal/core/text.h"

namespace tidal {
namespace {

// Real quantities are a handful of characters; the cap bounds the exact arithmetic below.
constexpr std::size_t kMaxQuantityLength = 256;
constexpr std::int64_t kMaxExponent = 100'000;  // saturation point for "1e999999999"

void SetError(std::string* error, std::string_view field, std::string_view text,
              std::string_view what) {
  if (error == nullptr) return;
  *error = field.empty() ? std::string() : std::string(field) + ": ";
  *error += QuoteInput(text);
  *error += what;
}

constexpr std::string_view kNotAQuantity =
    " is not a quantity (expected a number with an optional suffix such as 16Gi, 500m, 1e3)";

// Unsigned big integer, little-endian base 2^32: exact for every input under the length cap.
class BigUint {
 public:
  bool IsZero() const { return limbs_.empty(); }
  void MulAdd(std::uint32_t mul, std::uint32_t add) {
    std::uint64_t carry = add;
    for (std::uint32_t& limb : limbs_) {
      const std::uint64_t v = std::uint64_t{limb} * mul + carry;
      limb = static_cast<std::uint32_t>(v);
      carry = v >> 32;
    }
    if (carry != 0) limbs_.push_back(static_cast<std::uint32_t>(carry));
  }
  // Divides in place; returns the remainder.
  std::uint32_t DivSmall(std::uint32_t div) {
    std::uint64_t rem = 0;
    for (std::size_t i = limbs_.size(); i-- > 0;) {
      const std::uint64_t cur = (rem << 32) | limbs_[i];
      limbs_[i] = static_cast<std::uint32_t>(cur / div);
      rem = cur % div;
    }
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
    return static_cast<std::uint32_t>(rem);
  }
  std::optional<std::int64_t> ToInt64() const {
    if (limbs_.size() > 2) return std::nullopt;
    std::uint64_t v = 0;
    for (std::size_t i = limbs_.size(); i-- > 0;) v = (v << 32) | limbs_[i];
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(v);
  }

 private:
  std::vector<std::uint32_t> limbs_;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// value = digits × 10^exp10 × 2^exp2, with the sign apart.
struct Decomposed {
  bool negative = false;
  std::string digits;  // significant digits: no leading or trailing zeros; empty for 0
  std::int64_t exp10 = 0;
  int exp2 = 0;
};

bool ParseSuffix(std::string_view s, Decomposed* d) {
  if (s.empty()) return true;
  static constexpr struct {
    std::string_view name;
    int exp2;
  } kBinary[] = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& b : kBinary) {
    if (s == b.name) {
      d->exp2 = b.exp2;
      return true;
    }
  }
  if (s.size() == 1) {
    // A lone "E" is exa; "e" alone is an incomplete exponent and falls through to failure.
    static constexpr std::string_view kDecimal = "numkMGTPE";
    static constexpr int kExp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    const std::size_t i = kDecimal.find(s[0]);
    if (i == std::string_view::npos) return false;
    d->exp10 += kExp[i];
    return true;
  }
  if (s[0] != 'e' && s[0] != 'E') return false;
  std::size_t pos = 1;
  bool negative = false;
  if (s[pos] == '+' || s[pos] == '-') negative = s[pos++] == '-';
  if (pos == s.size()) return false;
  std::int64_t exp = 0;
  for (; pos < s.size(); ++pos) {
    if (!IsDigit(s[pos])) return false;
    if (exp < kMaxExponent) exp = exp * 10 + (s[pos] - '0');
  }
  d->exp10 += negative ? -exp : exp;
  return true;
}

bool Decompose(std::string_view text, Decomposed* d) {
  std::size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) d->negative = text[pos++] == '-';
  std::string all;
  bool any_digit = false;
  for (; pos < text.size() && IsDigit(text[pos]); ++pos, any_digit = true) all += text[pos];
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    for (; pos < text.size() && IsDigit(text[pos]); ++pos, any_digit = true) {
      all += text[pos];
      --d->exp10;
    }
  }
  if (!any_digit) return false;
  if (!ParseSuffix(text.substr(pos), d)) return false;
  const std::size_t first = all.find_first_not_of('0');
  if (first == std::string::npos) {
    d->exp10 = 0;  // zero: the exponents no longer matter
    d->exp2 = 0;
    return true;
  }
  std::size_t last = all.size();
  while (all[last - 1] == '0') {
    --last;
    ++d->exp10;
  }
  d->digits = all.substr(first, last - first);
  return true;
}

// ceil(|value| × 10^extra_exp10), rounded away from zero as Kubernetes' Quantity.Value().
std::optional<std::int64_t> Parse(std::string_view text, std::string_view field, int extra_exp10,
                                  std::string* error, bool* rounded) {
  if (rounded != nullptr) *rounded = false;
  if (text.size() > kMaxQuantityLength) {
    SetError(error, field, text, " is too long to be a quantity (at most 256 characters)");
    return std::nullopt;
  }
  Decomposed d;
  if (!Decompose(text, &d)) {
    SetError(error, field, text, kNotAQuantity);
    return std::nullopt;
  }
  if (d.digits.empty()) return 0;
  const std::int64_t exp10 = d.exp10 + extra_exp10;
  // digits × 10^exp10 has `int_digits` digits before the point: ≥ 10^(int_digits − 1).
  const std::int64_t int_digits = static_cast<std::int64_t>(d.digits.size()) + exp10;
  const auto too_large = [&]() -> std::optional<std::int64_t> {
    SetError(error, field, text, " is too large (does not fit in a 64-bit integer)");
    return std::nullopt;
  };
  if (int_digits > 19) return too_large();
  std::int64_t magnitude = 1;
  bool inexact = true;
  if (int_digits >= -20) {  // below that even ×2^60 stays under 1, so ceil gives 1
    BigUint n;
    for (char c : d.digits) n.MulAdd(10, static_cast<std::uint32_t>(c - '0'));
    for (std::int64_t i = 0; i < exp10; ++i) n.MulAdd(10, 0);
    for (int i = 0; i < d.exp2; ++i) n.MulAdd(2, 0);
    inexact = false;
    for (std::int64_t i = exp10; i < 0; ++i) inexact |= n.DivSmall(10) != 0;
    if (inexact) n.MulAdd(1, 1);
    auto v = n.ToInt64();
    if (!v) return too_large();
    magnitude = *v;
  }
  if (rounded != nullptr) *rounded = inexact;
  return d.negative ? -magnitude : magnitude;
}

}  // namespace

std::optional<std::int64_t> ParseQuantity(std::string_view text, std::string_view field,
                                          std::string* error) {
  return Parse(text, field, 0, error, nullptr);
}

std::optional<std::int64_t> ParseQuantityRounded(std::string_view text, std::string_view field,
                                                 std::string* error, bool* rounded) {
  return Parse(text, field, 0, error, rounded);
}

std::optional<std::int64_t> ParseQuantityMilli(std::string_view text, std::string_view field,
                                               std::string* error) {
  return Parse(text, field, 3, error, nullptr);
}

char* WriteBytes(char* p, std::int64_t bytes) {
  if (bytes == std::numeric_limits<std::int64_t>::min()) return std::copy_n("-8Ei", 4, p);
  if (bytes < 0) {
    *p++ = '-';
    bytes = -bytes;
  }
  if (bytes == 0) {
    *p++ = '0';
    return p;
  }
  static constexpr std::string_view kSuffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const auto value = static_cast<std::uint64_t>(bytes);
  const auto number = [&](std::uint64_t v) { return std::to_chars(p, p + 20, v).ptr; };
  const auto suffix = [&](int s) { return std::copy_n(kSuffix[s].data(), kSuffix[s].size(), p); };
  for (int s = 6; s >= 1; --s) {
    const std::uint64_t unit = std::uint64_t{1} << (10 * s);
    if (value % unit == 0) {
      p = number(value / unit);
      return suffix(s);
    }
  }
  if (value < 1024) return number(value);
  int s = 1;
  while (s < 6 && value >= (std::uint64_t{1} << (10 * (s + 1)))) ++s;
  for (;; ++s) {
    const std::uint64_t unit = std::uint64_t{1} << (10 * s);
    // Integer tenths, rounded half up; r × 10 < 2^64 since r < 2^60.
    const std::uint64_t tenths = value / unit * 10 + ((value % unit) * 10 + unit / 2) / unit;
    // 1023.96Ki would print as "1024.0Ki": the next suffix reads better.
    if (tenths >= 10240 && s < 6) continue;
    p = number(tenths / 10);
    *p++ = '.';
    *p++ = static_cast<char>('0' + tenths % 10);
    return suffix(s);
  }
}

std::string FormatBytes(std::int64_t bytes) {
  char buf[kMaxBytesText];
  return std::string(buf, WriteBytes(buf, bytes));
}

std::string FormatBytesExact(std::int64_t bytes) {
  std::string text = FormatBytes(bytes);
  return text.find('.') == std::string::npos ? text : std::to_string(bytes);
}

}  // namespace tidal
