#pragma once
// Text helpers for messages about user input.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/fast_text.h"

namespace tidal {

// Quotes user text for an error message: escaped (quotes, backslashes, control
// bytes as \xNN) and cut at 64 bytes, so a huge or binary value cannot flood a log.
std::string QuoteInput(std::string_view text);

// True when text is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF). YAML is Unicode text: other bytes do not survive a
// dump and reload, so config strings must pass this.
bool IsValidUtf8(std::string_view text);
// The length of the well-formed UTF-8 sequence at text[i] (1 for ASCII; i below
// text.size()), else 0 and, in *bad, how many bytes its maximal subpart takes (at
// least 1): what a repair replaces with one U+FFFD (Unicode 15, 3.9).
std::size_t Utf8SequenceAt(std::string_view text, std::size_t i, std::size_t* bad);

// Walks text line by line: lines end at '\n' (kept out of the line); a last line
// without one counts, an empty text has none.
//   Lines lines(text);
//   for (std::string_view line; lines.Next(&line);) … lines.number() …
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  // The next line into *line; false after the last.
  bool Next(std::string_view* line) {
    if (pos_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++number_;
    return true;
  }
  // The number of the line Next gave last, from 1.
  int number() const { return number_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  int number_ = 0;
};

// Numbers for people and scripts (check-config, explain --output json).
// yaml-cpp's emitter writes 17 significant digits (0.7 as 0.69999999999999996);
// nlohmann::json and std::to_chars write the shortest text that reads back, which
// is short only for a double nearest a short decimal: 19.01 / 100 is
// 0.19010000000000002. So the output boundary prints shortest and rounds what
// arithmetic produced to the double of the decimal meant.

// The shortest text that reads back as exactly `v` (0.7, 1e-05, 42), whatever the
// locale.
std::string FormatShortest(double v);
// `v` to `decimals` places, as the double nearest that decimal (0.1901): it
// prints short. Not finite: unchanged.
double RoundDecimals(double v, int decimals);
// `v` to `digits` significant digits, likewise (0.85 - 0.03 = 0.8200000000000001
// becomes 0.82). For ratios derived from decimal inputs, whose last bits are the
// arithmetic's rounding error, not information.
double RoundSignificant(double v, int digits);

// ASCII letters compared without case (Go's JSON keys, "True" in annotations).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// A list of strings in one buffer: thousands of node names cost two allocations
// (kept when cleared) and are appended without a per-string resize. Copies stay
// valid (it holds offsets, not pointers).
class StringList {
 public:
  StringList() = default;
  // A copy holds the strings, not the room left to grow (up to as much again).
  StringList(const StringList& other)
      : bytes_(other.bytes_.data(), other.used_), used_(other.used_), ends_(other.ends_) {}
  StringList& operator=(const StringList& other) {
    if (this != &other) {
      bytes_.assign(other.bytes_.data(), other.used_);
      used_ = other.used_;
      ends_ = other.ends_;
    }
    return *this;
  }
  StringList(StringList&&) noexcept = default;
  StringList& operator=(StringList&&) noexcept = default;

  std::size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](std::size_t i) const {
    const std::uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_.data() + begin, ends_[i] - begin);
  }
  // Calls f(i, the i-th string) for each, in order.
  template <class F>
  void ForEach(F&& f) const {
    const char* bytes = bytes_.data();
    std::uint32_t begin = 0;
    for (std::size_t i = 0; i < ends_.size(); ++i) {
      f(i, std::string_view(bytes + begin, ends_[i] - begin));
      begin = ends_[i];
    }
  }
  // Writes a view of each string to out[0, size()).
  void Views(std::string_view* out) const {
    ForEach([out](std::size_t i, std::string_view s) { out[i] = s; });
  }
  // Every string, back to back.
  std::string_view bytes() const { return std::string_view(bytes_.data(), used_); }
  // Inlined where names are decoded (thousands per request); growing is out of line.
  [[gnu::always_inline]] void push_back(std::string_view s) {
    if (s.size() > bytes_.size() - used_) [[unlikely]]
      Grow(s.size());
    CopyText(bytes_.data() + used_, s);
    used_ += static_cast<std::uint32_t>(s.size());
    ends_.push_back(used_);
  }
  void clear() {
    used_ = 0;
    ends_.clear();
  }
  void reserve(std::size_t strings, std::size_t bytes) {
    ends_.reserve(strings);
    if (bytes > bytes_.size()) bytes_.resize(bytes);
  }
  std::vector<std::string> Strings() const {
    std::vector<std::string> out;
    out.reserve(size());
    for (std::size_t i = 0; i < size(); ++i) out.emplace_back((*this)[i]);
    return out;
  }

 private:
  [[gnu::noinline]] void Grow(std::size_t more) {
    bytes_.resize(std::max(2 * bytes_.size(), used_ + more + 64));
  }
  std::string bytes_;  // [0, used_) holds the strings; the rest is room to grow
  std::uint32_t used_ = 0;
  std::vector<std::uint32_t> ends_;  // offsets past each string; under 4 GiB in all
};

}  // namespace tidal
