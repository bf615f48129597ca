#include "tidal/deviceplugin/annotation.h"

#include <fmt/format.h>

#include <bitset>

namespace tidal::deviceplugin {
namespace {

// Quoted for a log line or an event: long or binary values are cut and escaped
// so that a hostile annotation cannot flood or forge log lines.
std::string Quote(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > kMax) out += "...";
  return out + "\"";
}

Status Bad(std::string_view text, std::string_view why) {
  return Status::Unresolvable(
      fmt::format("{} {}: {}; expected GPU indices 0-{} separated by commas, e.g. \"0,2\"",
                  kAnnotationGpus, Quote(text), why, kMaxGpus - 1));
}

}  // namespace

Status ParseGpuList(std::string_view text, std::vector<int>* out) {
  out->clear();
  if (text.empty()) return Bad(text, "empty");
  std::bitset<kMaxGpus> seen;
  std::vector<int> gpus;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    int value = 0;
    // Two digits are enough below 64; a third is already out of range.
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 3) {
      value = value * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start) return Bad(text, fmt::format("no GPU index at position {}", start));
    if (value >= kMaxGpus || (i < text.size() && text[i] >= '0' && text[i] <= '9'))
      return Bad(text, fmt::format("GPU index at position {} is not below {}", start, kMaxGpus));
    if (i - start > 1 && text[start] == '0')
      return Bad(text, fmt::format("GPU index at position {} has a leading zero", start));
    if (seen.test(static_cast<std::size_t>(value)))
      return Bad(text, fmt::format("GPU {} named twice", value));
    seen.set(static_cast<std::size_t>(value));
    gpus.push_back(value);
    if (i == text.size()) break;
    if (text[i] != ',') return Bad(text, fmt::format("unexpected character at position {}", i));
    ++i;
  }
  *out = std::move(gpus);
  return Status::Ok();
}

std::string FormatGpuList(const std::vector<int>& gpus) {
  std::string out;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(gpus[i]);
  }
  return out;
}

}  // namespace tidal::deviceplugin
