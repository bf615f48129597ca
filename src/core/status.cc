#include "tidal/core/status.h"

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

Status& Status::Tag(std::string_view who) {
  if (!who.empty()) reason_ = std::string(who) + ": " + reason_;
  return *this;
}

}  // namespace tidal
