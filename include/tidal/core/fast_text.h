#pragma once
// The fast path's text output, in one place: what the extender writes for every
// candidate of a request (node names as JSON strings, rejection reasons with
// their numbers). Each function prints exactly what a plain equivalent prints
// (fmt's "{:.Nf}", nlohmann::json's dump, memcpy); fast_text_test.cc holds them
// side by side. Text off that path is written with fmt.
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tidal {

// Equal bytes, compared without a call for up to 16 bytes (most node names).
inline bool SameBytes(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  if (n > 16) return std::memcmp(a.data(), b.data(), n) == 0;
  const auto same = [&](std::size_t at, auto word) {
    std::memcpy(&word, a.data() + at, sizeof word);
    decltype(word) other;
    std::memcpy(&other, b.data() + at, sizeof other);
    return word == other;
  };
  if (n >= 8) return same(0, std::uint64_t{}) && same(n - 8, std::uint64_t{});
  if (n >= 4) return same(0, std::uint32_t{}) && same(n - 4, std::uint32_t{});
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Copies `text` to `p` and returns its end: up to 16 bytes (most node names) in
// overlapping words rather than a call to memcpy.
inline char* CopyText(char* p, std::string_view text) {
  const std::size_t n = text.size();
  const char* s = text.data();
  const auto copy = [&](auto word) {
    std::memcpy(&word, s, sizeof word);
    std::memcpy(p, &word, sizeof word);
    std::memcpy(&word, s + n - sizeof word, sizeof word);
    std::memcpy(p + n - sizeof word, &word, sizeof word);
  };
  if (n >= 8 && n <= 16) {
    copy(std::uint64_t{});
  } else if (n >= 4 && n < 8) {
    copy(std::uint32_t{});
  } else if (n != 0) {  // an empty view may have no data
    std::memcpy(p, s, n);
  }
  return p + n;
}

// ---- Numbers ----

// The longest WriteFixed writes.
inline constexpr std::size_t kMaxFixedText = 20;

namespace fast_text_detail {
// Exactly rounded fixed notation from the binary value in integers: x = m·2^e,
// so x·10^p = m·10^p·2^e, rounded half to even.
template <int kPrecision>
inline char* WriteFixedAt(char* p, double x) {
  // The scale is a constant: the divisions below compile to multiplications.
  constexpr std::uint64_t scale = kPrecision == 0 ? 1 : kPrecision == 1 ? 10 : 100;
  if (!(x >= 0 && x < 1e13) || std::signbit(x)) return nullptr;
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>(bits >> 52);
  if (biased == 0 && x != 0) return nullptr;  // subnormal
  std::uint64_t q = 0;
  if (x != 0) {
    const std::uint64_t m = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
    const int e = biased - 1075;        // x < 1e13 < 2^52: e < 0
    const std::uint64_t n = m * scale;  // < 2^60
    if (-e < 61) {
      const int sh = -e;
      q = n >> sh;
      const std::uint64_t rem = n & ((std::uint64_t{1} << sh) - 1);
      const std::uint64_t half = std::uint64_t{1} << (sh - 1);
      if (rem > half || (rem == half && (q & 1))) ++q;
    }  // else n·2^e < 2^60·2^-61: below a half, rounds to 0
  }
  p = std::to_chars(p, p + 16, q / scale).ptr;  // q / scale < 1e13: 13 digits
  if constexpr (kPrecision > 0) {
    *p++ = '.';
    std::uint64_t frac = q % scale;
    for (int d = kPrecision - 1; d >= 0; --d) {
      p[d] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    p += kPrecision;
  }
  return p;
}

inline double PercentOf(double fraction) { return std::floor(fraction * 100 + 0.5); }
}  // namespace fast_text_detail

// `x` in fixed notation with `precision` 0 to 2 decimals, exactly rounded (half
// to even, as fmt and std::to_chars): at most kMaxFixedText characters at `p`,
// returning the end; nullptr for x outside [0, 1e13) or another precision.
// About a tenth of the cost of to_chars with a precision.
inline char* WriteFixed(char* p, double x, int precision) {
  switch (precision) {
    case 0:
      return fast_text_detail::WriteFixedAt<0>(p, x);
    case 1:
      return fast_text_detail::WriteFixedAt<1>(p, x);
    case 2:
      return fast_text_detail::WriteFixedAt<2>(p, x);
    default:
      return nullptr;
  }
}
// The text of fmt "{:.{precision}f}" for any x and precision.
void AppendFixed(std::string& out, double x, int precision);
// A fraction as a whole percentage: fmt "{:.0f}%" of floor(fraction * 100 + 0.5).
void AppendPercent(std::string& out, double fraction);

// A message of a few parts assembled on the stack and appended once (reasons
// the extender formats for every node rejected). Past its room it goes on in a
// string: any message is whole.
class StackMessage {
 public:
  StackMessage() = default;
  StackMessage(const StackMessage&) = delete;  // end_ points into buf_
  StackMessage& operator=(const StackMessage&) = delete;
  StackMessage& Text(std::string_view text) {
    if (Room(text.size())) {
      end_ = CopyText(end_, text);
    } else {
      spill_ += text;
    }
    return *this;
  }
  StackMessage& Integer(std::int64_t v) {
    constexpr std::size_t kMaxDigits = 20;  // "-9223372036854775808"
    return Written(kMaxDigits, [v](char* p) { return std::to_chars(p, p + kMaxDigits, v).ptr; });
  }
  // AppendFixed's text.
  StackMessage& Fixed(double x, int precision) {
    if (Room(kMaxFixedText)) {
      if (char* end = WriteFixed(end_, x, precision)) {
        end_ = end;
        return *this;
      }
      Spill();
    }
    AppendFixed(spill_, x, precision);
    return *this;
  }
  // AppendPercent's text.
  StackMessage& Percent(double fraction) {
    return Fixed(fast_text_detail::PercentOf(fraction), 0).Text("%");
  }
  // Up to `max` characters written by write(char* p), which returns their end.
  template <class Write>
  StackMessage& Written(std::size_t max, Write write) {
    if (Room(max)) {
      end_ = write(end_);
    } else {
      std::string piece(max, '\0');
      piece.resize(static_cast<std::size_t>(write(piece.data()) - piece.data()));
      spill_ += piece;
    }
    return *this;
  }
  void AppendTo(std::string* out) const;

 private:
  // Whether `n` more bytes fit on the stack; if not, the message moves to spill_.
  bool Room(std::size_t n) {
    if (!spilled_ && static_cast<std::size_t>(buf_ + sizeof buf_ - end_) >= n) return true;
    Spill();
    return false;
  }
  void Spill();
  char buf_[192];
  char* end_ = buf_;
  bool spilled_ = false;
  std::string spill_;
};

// ---- JSON strings ----

namespace fast_text_detail {
#if defined(__SSE2__)
// Whether a byte of 16 needs escaping: below 0x20, '"' or '\\'.
inline bool NeedsEscape16(__m128i v) {
  // Unsigned v <= 0x1f exactly when min(v, 0x1f) == v.
  const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
  const __m128i special =
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  return _mm_movemask_epi8(_mm_or_si128(control, special)) != 0;
}
#else
// The same for 8 bytes in a word (the bit tricks of "determine if a word has a
// byte less than n"), exact as a whole.
inline bool NeedsEscape8(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighs;
  return (below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) != 0;
}
#endif
// The slow paths: text with a byte to escape.
std::size_t EscapedSize(std::string_view text);
char* WriteEscaped(char* p, std::string_view text);
}  // namespace fast_text_detail

// Whether `text` needs no escaping in a JSON string (node names and reasons
// usually do not): 16 bytes at a time with SSE2, which every x86-64 has, else 8
// in a word. Bytes from 0x7f up are plain, as nlohmann::json and Go leave them.
inline bool IsPlainJson(std::string_view text) {
  namespace d = fast_text_detail;
  const std::size_t n = text.size();
  const char* p = text.data();
#if defined(__SSE2__)
  if (n >= 16) {
    for (std::size_t i = 0; i + 16 <= n; i += 16)
      if (d::NeedsEscape16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)))) return false;
    // The last 16 bytes, overlapping the blocks before: no byte-by-byte tail.
    return !d::NeedsEscape16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16)));
  }
  // Shorter (most node names): two overlapping words, or one padded with spaces.
  std::uint64_t lo = 0x2020202020202020ULL, hi = lo;
  if (n >= 8) {
    std::memcpy(&lo, p, 8);
    std::memcpy(&hi, p + n - 8, 8);
  } else if (n > 0) {  // an empty view may have no data
    std::memcpy(&lo, p, n);
  }
  return !d::NeedsEscape16(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)));
#else
  std::uint64_t w;
  if (n < 8) {
    w = 0x2020202020202020ULL;         // spaces: plain
    if (n > 0) std::memcpy(&w, p, n);  // an empty view may have no data
    return !d::NeedsEscape8(w);
  }
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::memcpy(&w, p + i, 8);
    if (d::NeedsEscape8(w)) return false;
  }
  std::memcpy(&w, p + n - 8, 8);  // overlapping the words before
  return !d::NeedsEscape8(w);
#endif
}

// The size of `text` as a JSON string literal, quotes included.
[[gnu::always_inline]] inline std::size_t JsonStringSize(std::string_view text) {
  return IsPlainJson(text) ? text.size() + 2 : fast_text_detail::EscapedSize(text);
}

// Writes `text` as a JSON string literal of `size` bytes (JsonStringSize) at `p`;
// returns its end.
[[gnu::always_inline]] inline char* WriteJsonString(char* p, std::string_view text,
                                                    std::size_t size) {
  *p++ = '"';
  if (size == text.size() + 2) [[likely]] {
    p = CopyText(p, text);
  } else {
    p = fast_text_detail::WriteEscaped(p, text);
  }
  *p++ = '"';
  return p;
}

// `text` as a JSON string literal: '"', '\\', \n, \r and \t escaped by letter,
// other control bytes as \u00XX, every other byte as it is (JSON readers,
// nlohmann::json's and Go's, read back `text`).
void AppendJsonString(std::string_view text, std::string* out);

// Appends `text` as a JSON string to a comma-separated run (the comma first
// unless the run is empty).
void AppendJsonListItem(std::string_view text, std::string* run);
// Appends the member "key":"value" to a comma-separated run, its value written in
// place where it is formatted: OpenJsonMember appends `"key":"` (after a comma
// unless the run is empty) and returns where the value starts; the caller appends
// the value's text as it is; CloseJsonMember escapes that text if it needs it and
// closes the string.
std::size_t OpenJsonMember(std::string_view key, std::string* run);
void CloseJsonMember(std::size_t value_at, std::string* run);

}  // namespace tidal
