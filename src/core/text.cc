#include "tidal/core/text.h"

#include <charconv>
#include <cmath>

namespace tidal {

namespace {

// Through the decimal text: from_chars gives the double nearest it, which
// scaling and dividing back (std::round(v * 1e4) / 1e4) does not always.
double ViaText(double v, std::chars_format format, int precision) {
  if (!std::isfinite(v)) return v;
  char buf[400];  // fixed notation of 1e308 with decimals
  const auto written = std::to_chars(buf, buf + sizeof buf, v, format, precision);
  if (written.ec != std::errc()) return v;
  double out = v;
  std::from_chars(buf, written.ptr, out);
  return out;
}

}  // namespace

std::string FormatShortest(double v) {
  char buf[32];
  const auto written = std::to_chars(buf, buf + sizeof buf, v);
  return written.ec == std::errc() ? std::string(buf, written.ptr) : std::string("?");
}

double RoundDecimals(double v, int decimals) {
  return ViaText(v, std::chars_format::fixed, decimals);
}

double RoundSignificant(double v, int digits) {
  return ViaText(v, std::chars_format::general, digits);
}

std::string QuoteInput(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::size_t Utf8SequenceAt(std::string_view text, std::size_t i, std::size_t* bad) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // Table 3-7: the allowed second bytes
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // UTF-16 surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    *bad = 1;  // a continuation byte, C0/C1 (overlong) or F5..FF: never a lead
    return 0;
  }
  std::size_t k = 1;
  for (; k < length && i + k < text.size(); ++k) {
    const unsigned char b = byte(i + k);
    if (k == 1 ? b < low || b > high : (b & 0xc0) != 0x80) break;
  }
  if (k == length) return length;
  *bad = k;  // the lead and the continuation bytes that could still have followed it
  return 0;
}

bool IsValidUtf8(std::string_view text) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = Utf8SequenceAt(text, i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace tidal
