#include "tidal/agent/metrics.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace tidal::agent {

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kCounter:
      return "counter";
  }
  return "untyped";
}

MetricFamily& MetricSet::Find(std::string_view name) {
  for (MetricFamily& f : families_)
    if (f.name == name) return f;
  families_.push_back(MetricFamily{std::string(name), "", MetricType::kGauge, {}});
  return families_.back();
}

void MetricSet::Declare(std::string_view name, std::string_view help, MetricType type) {
  for (MetricFamily& f : families_)
    if (f.name == name) return;
  families_.push_back(MetricFamily{std::string(name), std::string(help), type, {}});
}

void MetricSet::Add(std::string_view name, LabelPairs labels, double value) {
  Sample s;
  s.labels.reserve(labels.size() + 1);
  s.labels.emplace_back("node", node_);
  for (auto& l : labels) s.labels.push_back(std::move(l));
  s.value = value;
  Find(name).samples.push_back(std::move(s));
}

namespace {
// A label value for the log: ASCII only, other bytes and controls as \xNN, cut
// at 64 bytes (a log line is no place for arbitrary bytes either).
std::string ShowBytes(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < value.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > 64) out += "...";
  return out;
}
}  // namespace

std::string SerializeText(const std::vector<MetricFamily>& families,
                          std::vector<std::string>* repaired) {
  std::string out;
  out.reserve(4096);
  for (const MetricFamily& f : families) {
    if (f.samples.empty()) continue;
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += EscapeHelp(f.help);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += MetricTypeName(f.type);
    out += '\n';
    for (const Sample& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += '{';
        for (std::size_t i = 0; i < s.labels.size(); ++i) {
          if (i) out += ',';
          out += s.labels[i].first;
          out += "=\"";
          bool bad = false;
          out += EscapeLabelValue(s.labels[i].second, &bad);
          if (bad && repaired)
            repaired->push_back(s.labels[i].first + "=\"" + ShowBytes(s.labels[i].second) + "\"");
          out += '"';
        }
        out += '}';
      }
      out += ' ';
      AppendValue(s.value, &out);
      out += '\n';
    }
  }
  return out;
}

}  // namespace tidal::agent
