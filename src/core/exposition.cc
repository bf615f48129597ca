#include "tidal/core/exposition.h"

#include <charconv>
#include <cmath>

#include "tidal/core/text.h"

namespace tidal {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

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
