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

bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;  // allowed range of the second byte
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
      return false;  // a continuation byte, an overlong lead, or 0xf5..0xff
    }
    if (text.size() - i < length) return false;
    const unsigned char second = static_cast<unsigned char>(text[i + 1]);
    if (second < low || second > high) return false;
    for (std::size_t k = 2; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    i += length;
  }
  return true;
}

}  // namespace tidal
