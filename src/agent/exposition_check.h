#pragma once
// Test helper: checks what promtool does not, that every metric family in a text
// exposition is one uninterrupted group with HELP and TYPE before its samples,
// and that no series repeats.
#include <set>
#include <string>
#include <string_view>

namespace tidal::agent::testing {

inline std::string CheckExposition(std::string_view text) {
  if (!text.empty() && text.back() != '\n') return "last line does not end with a newline";
  std::set<std::string> closed;  // families whose group has ended
  std::set<std::string> series;
  std::string current;
  bool help = false, type = false;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string name;
    const bool is_help = line.starts_with("# HELP ");
    const bool is_type = line.starts_with("# TYPE ");
    if (is_help || is_type) {
      const std::string_view rest = line.substr(7);
      name = std::string(rest.substr(0, rest.find(' ')));
    } else if (line[0] == '#') {
      continue;
    } else {
      name = std::string(line.substr(0, line.find_first_of("{ ")));
    }
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (name != current) {
      if (!current.empty()) closed.insert(current);
      if (closed.count(name)) return where + "family " + name + " is split into two groups";
      current = name;
      help = type = false;
    }
    if (is_help) {
      if (help || type) return where + "HELP of " + name + " repeated or after TYPE";
      help = true;
    } else if (is_type) {
      if (type) return where + "TYPE of " + name + " repeated";
      type = true;
    } else {
      if (!help || !type) return where + "sample of " + name + " before its HELP and TYPE";
      const std::string key(line.substr(0, line.rfind(' ')));
      if (!series.insert(key).second) return where + "series repeated: " + key;
    }
  }
  return "";
}

}  // namespace tidal::agent::testing
