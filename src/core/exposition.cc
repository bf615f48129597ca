#include "tidal/core/exposition.h"

#include <charconv>
#include <cmath>

namespace tidal {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed sequence at text[i] (1 for ASCII), else 0 and, in
// *bad, how many bytes its maximal subpart takes (at least 1).
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

}  // namespace

std::string RepairUtf8(std::string_view text, bool* repaired) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t bad = 0;
    if (const std::size_t n = Utf8SequenceAt(text, i, &bad); n) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      if (repaired) *repaired = true;
      i += bad;
    }
  }
  return out;
}

std::string EscapeLabelValue(std::string_view value, bool* repaired) {
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x80) {
      out += c;
    } else {
      std::size_t bad = 0;
      if (const std::size_t n = Utf8SequenceAt(value, i, &bad); n) {
        out.append(value.substr(i, n));
        i += n;
      } else {
        out.append(kReplacement);
        if (repaired) *repaired = true;
        i += bad;
      }
      continue;
    }
    ++i;
  }
  return out;
}

std::string EscapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendValue(double value, std::string* out) {
  if (std::isnan(value)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    *out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  // std::to_chars never consults the locale, unlike printf and iostreams.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, value);
  if (res.ec != std::errc()) {
    *out += "NaN";
    return;
  }
  out->append(buf, res.ptr);
}

void AppendBuildInfo(const BuildInfo& build, std::string* out) {
  *out +=
      "# HELP tidal_build_info The Tidal release and git revision this process runs; always 1.\n";
  *out += "# TYPE tidal_build_info gauge\n";
  *out += "tidal_build_info{version=\"";
  *out += EscapeLabelValue(build.version);
  *out += "\",revision=\"";
  *out += EscapeLabelValue(build.revision);
  *out += "\"} 1\n";
}

}  // namespace tidal
