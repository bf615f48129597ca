#include "tidal/core/exposition.h"

#include <charconv>
#include <cmath>

namespace tidal {

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
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
