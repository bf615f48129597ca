#pragma once
// Pieces of the Prometheus text exposition format 0.0.4 shared by every
// component that serves /metrics (the agent's collections, the extender's own
// instruments).
#include <string>
#include <string_view>

namespace tidal {

// Escapes a label value: backslash, double quote and newline. A label value must
// be UTF-8 (Prometheus refuses the whole exposition otherwise), so each ill-formed
// sequence becomes U+FFFD as RepairUtf8 does; *repaired (when given) is set then.
std::string EscapeLabelValue(std::string_view value, bool* repaired = nullptr);
// `text` as valid UTF-8: each maximal subpart of an ill-formed sequence (Unicode
// §3.9, the WHATWG decoder's rule) replaced by one U+FFFD. So a truncated
// sequence is one U+FFFD, and an overlong form, a surrogate, a code point above
// U+10FFFF or a lone continuation byte is one per byte. Sets *repaired when it
// replaced anything; valid text comes back unchanged.
std::string RepairUtf8(std::string_view text, bool* repaired = nullptr);
// Escapes HELP text: backslash and newline.
std::string EscapeHelp(std::string_view text);
// Appends a sample value the way Go's strconv does for Prometheus ("NaN", "+Inf",
// shortest round-trip digits); independent of the C and C++ locales.
void AppendValue(double value, std::string* out);

// What an executable was built from: its release (the VERSION file) and `git
// describe` of the checkout (empty for a build from a source archive). The
// executable hands it down; a library never reads it from a global.
struct BuildInfo {
  std::string version;
  std::string revision;
};
// Appends tidal_build_info{version="...",revision="..."} 1 with its HELP and
// TYPE, the usual way to export a version to Prometheus (join on it in queries).
void AppendBuildInfo(const BuildInfo& build, std::string* out);

}  // namespace tidal
