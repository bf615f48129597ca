#include "metrics/readings.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "tidal/core/text.h"

namespace tidal::readings {

std::string_view Label(const Labels& labels, const char* key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

std::optional<int> GpuIndex(const Labels& labels, const char* key) {
  const auto it = labels.find(key);
  if (it == labels.end()) return std::nullopt;
  int v = -1;
  const auto& s = it->second;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0 || v >= kMaxGpusPerNode)
    return std::nullopt;
  return v;
}

std::string DescribeSeries(std::string_view name, const Labels& labels) {
  std::string out(name);
  out += "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (k == "__name__" || k == "instance" || k == "job" || k == kSeriesMark) continue;
    out += (first ? "" : ",") + k + "=" + QuoteInput(v);
    first = false;
  }
  return out + "}";
}

void Merge(std::optional<double>* slot, double value, const std::string& what,
           std::vector<std::string>* problems) {
  if (slot->has_value() && **slot != value) {
    problems->push_back(fmt::format("{}: two series disagree ({} and {})", what, **slot, value));
    *slot = std::max(**slot, value);
    return;
  }
  *slot = value;
}

std::optional<std::string> GpuMemoryProblem(int index, double used, double total) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (used > total)
    return fmt::format("GPU {}: used {} MiB exceeds total {} MiB", index, used / kMiB,
                       total / kMiB);
  if (!(total >= kMiB && total < 9.0e18))
    return fmt::format("GPU {}: total memory {} MiB: expected at least 1 MiB and under 8 EiB",
                       index, total / kMiB);
  return std::nullopt;
}

std::optional<int> LinkCount(double value, const std::string& what,
                             std::vector<std::string>* problems) {
  constexpr int kMaxLinks = 1 << 16;
  if (value >= 0 && value <= kMaxLinks) return static_cast<int>(value);
  problems->push_back(fmt::format("{} = {}: expected a link count 0..{}", what, value, kMaxLinks));
  return std::nullopt;
}

}  // namespace tidal::readings
