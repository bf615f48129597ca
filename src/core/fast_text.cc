#include "tidal/core/fast_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

namespace tidal {
namespace {

// The escape of a byte that needs one ("\n", "\u0001"), into `p`; returns its end.
char* WriteEscape(char* p, unsigned char c) {
  *p++ = '\\';
  switch (c) {
    case '"':
      *p++ = '"';
      break;
    case '\\':
      *p++ = '\\';
      break;
    case '\n':
      *p++ = 'n';
      break;
    case '\r':
      *p++ = 'r';
      break;
    case '\t':
      *p++ = 't';
      break;
    default:
      static constexpr char kHex[] = "0123456789abcdef";
      p = std::copy_n("u00", 3, p);
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 15];
  }
  return p;
}

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

}  // namespace

void AppendFixed(std::string& out, double x, int precision) {
  char buf[kMaxFixedText];
  if (char* end = WriteFixed(buf, x, precision)) {
    out.append(buf, end);
    return;
  }
  if (!std::isfinite(x)) {
    out += fmt::format("{:.{}f}", x, precision);  // "inf", "nan": keep fmt's spelling
    return;
  }
  // std::to_chars prints the exactly rounded value, as fmt does.
  char wide[64];
  const auto r = std::to_chars(wide, wide + sizeof wide, x, std::chars_format::fixed, precision);
  if (r.ec == std::errc()) {
    out.append(wide, r.ptr);
  } else {
    out += fmt::format("{:.{}f}", x, precision);  // longer than 64 characters
  }
}

void AppendPercent(std::string& out, double fraction) {
  AppendFixed(out, fast_text_detail::PercentOf(fraction), 0);
  out += '%';
}

void StackMessage::Spill() {
  if (spilled_) return;
  spill_.assign(buf_, static_cast<std::size_t>(end_ - buf_));
  spilled_ = true;
}

void StackMessage::AppendTo(std::string* out) const {
  if (spilled_) {
    out->append(spill_);
  } else {
    out->append(buf_, static_cast<std::size_t>(end_ - buf_));
  }
}

namespace fast_text_detail {

std::size_t EscapedSize(std::string_view text) {
  std::size_t size = 2;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    size += !NeedsEscape(c)                                                  ? 1
            : (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t') ? 2
                                                                             : 6;
  }
  return size;
}

char* WriteEscaped(char* p, std::string_view text) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (NeedsEscape(c)) {
      p = WriteEscape(p, c);
    } else {
      *p++ = ch;
    }
  }
  return p;
}

}  // namespace fast_text_detail

void AppendJsonString(std::string_view text, std::string* out) {
  const std::size_t size = JsonStringSize(text);
  const std::size_t at = out->size();
  out->resize(at + size);
  WriteJsonString(out->data() + at, text, size);
}

void AppendJsonListItem(std::string_view text, std::string* run) {
  const std::size_t size = JsonStringSize(text);
  const std::size_t at = run->size();
  const std::size_t comma = at == 0 ? 0 : 1;
  run->resize(at + comma + size);
  char* p = run->data() + at;
  if (comma) *p++ = ',';
  WriteJsonString(p, text, size);
}

std::size_t OpenJsonMember(std::string_view key, std::string* run) {
  const std::size_t key_size = JsonStringSize(key);
  const std::size_t at = run->size();
  const std::size_t comma = at == 0 ? 0 : 1;
  run->resize(at + comma + key_size + 2);
  char* p = run->data() + at;
  if (comma) *p++ = ',';
  p = WriteJsonString(p, key, key_size);
  *p++ = ':';
  *p = '"';
  return run->size();
}

void CloseJsonMember(std::size_t value_at, std::string* run) {
  const std::string_view value = std::string_view(*run).substr(value_at);
  if (IsPlainJson(value)) {
    run->push_back('"');
    return;
  }
  const std::string raw(value);
  run->resize(value_at - 1);  // back to before the opening quote
  AppendJsonString(raw, run);
}

}  // namespace tidal
