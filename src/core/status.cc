#include "tidal/core/status.h"

#include <algorithm>
#include <cstring>

namespace tidal {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kFits:
      return "fits";
    case Code::kUnfit:
      return "unfit";
    case Code::kUnresolvable:
      return "unresolvable";
    case Code::kError:
      return "error";
  }
  return "error";
}

Status Status::Deferred(Code code, Formatter format, std::initializer_list<Arg> args) {
  Status s;
  s.code_ = code;
  s.format_ = format;
  std::copy_n(args.begin(), std::min(args.size(), kMaxArgs), s.args_);
  return s;
}

std::string Status::reason() const {
  if (!format_) return reason_;
  std::string out;
  out.reserve(reason_.size() + 64);
  AppendReason(&out);
  return out;
}

void Status::AppendReason(std::string* out) const {
  out->append(reason_);
  if (format_) format_(args_, out);
}

Status& Status::Tag(std::string_view who) {
  // With a deferred reason reason_ holds only the tags, so the same prefixing applies.
  // In place, without temporaries: the runner tags every node it rejects.
  if (who.empty()) return *this;
  char tag[48];
  if (reason_.empty() && who.size() + 2 <= sizeof tag) {
    // One assignment: a deferred reason's tags fit the small-string buffer.
    std::memcpy(tag, who.data(), who.size());
    tag[who.size()] = ':';
    tag[who.size() + 1] = ' ';
    reason_.assign(tag, who.size() + 2);
  } else if (reason_.empty()) {
    reason_.assign(who.data(), who.size());
    reason_.append(": ", 2);
  } else {
    reason_.insert(0, ": ", 2);
    reason_.insert(0, who.data(), who.size());
  }
  return *this;
}

}  // namespace tidal
