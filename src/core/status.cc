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

Status::Status(Code code, std::string_view reason) {
  in_.code = code;
  if (reason.size() <= kHead) {
    std::memcpy(in_.head, reason.data(), reason.size());
    in_.head_len = static_cast<unsigned char>(reason.size());
  } else {
    tail_ = std::make_unique<std::string>(reason);
  }
}

Status::Status(const Status& other) : in_(other.in_) {
  std::memcpy(args_, other.args_, sizeof args_);
  if (other.tail_) tail_ = std::make_unique<std::string>(*other.tail_);
}

Status& Status::operator=(const Status& other) {
  if (this != &other) *this = Status(other);
  return *this;
}

std::string Status::reason() const {
  std::string out;
  if (in_.format) out.reserve(in_.head_len + 64);
  AppendReason(&out);
  return out;
}

void Status::AppendReason(std::string* out) const {
  out->append(in_.head, in_.head_len);
  if (tail_) out->append(*tail_);
  if (in_.format) in_.format(args_, out);
}

Status& Status::TagSlow(std::string_view who) {
  if (who.empty()) return *this;
  const std::size_t add = who.size() + 2;
  const std::size_t len = in_.head_len;
  if (len + add <= kHead) {
    std::memmove(in_.head + add, in_.head, len);
    std::memcpy(in_.head, who.data(), who.size());
    in_.head[who.size()] = ':';
    in_.head[who.size() + 1] = ' ';
    in_.head_len = static_cast<unsigned char>(len + add);
    return *this;
  }
  // The head is full: everything moves to the tail, in reading order.
  std::string text;
  text.reserve(add + len + (tail_ ? tail_->size() : 0));
  text.append(who).append(": ").append(in_.head, len);
  if (tail_) text += *tail_;
  tail_ = std::make_unique<std::string>(std::move(text));
  in_.head_len = 0;
  return *this;
}

}  // namespace tidal
