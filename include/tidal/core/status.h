#pragma once
// Status: the result type of the policy path. Codes form a small closed set;
// exceptions are used only at start-up and config load.
#include <string>
#include <string_view>
#include <utility>

namespace tidal {

enum class Code : unsigned char {
  kFits = 0,          // the pod fits (OK)
  kUnfit,             // does not fit now; may fit later or after preemption
  kUnresolvable,      // will not fit whatever happens (bad annotation, too many GPUs)
  kError,             // an internal error; the node verdict is unknown
};

std::string_view CodeName(Code code);

class Status {
 public:
  Status() = default;  // fits; costs nothing
  static Status Fits() { return Status(); }
  static Status Unfit(std::string reason) { return Status(Code::kUnfit, std::move(reason)); }
  static Status Unresolvable(std::string reason) {
    return Status(Code::kUnresolvable, std::move(reason));
  }
  static Status Error(std::string reason) { return Status(Code::kError, std::move(reason)); }

  bool ok() const { return code_ == Code::kFits; }
  Code code() const { return code_; }
  const std::string& reason() const { return reason_; }

  // Prefixes the reason with the component that produced it ("gpufit: ...").
  Status& Tag(std::string_view who);

 private:
  Status(Code code, std::string reason) : code_(code), reason_(std::move(reason)) {}
  Code code_ = Code::kFits;
  std::string reason_;
};

// A user-facing input error (config, pod, snapshot file). Thrown only while loading.
struct InputError {
  std::string message;
};

}  // namespace tidal
