#pragma once
// Status: the result type of the policy path. Codes form a small closed set;
// exceptions are used only at start-up and config load.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
  // A number kept by a deferred reason (see Deferred).
  union Arg {
    std::int64_t i;
    double d;
  };
  static Arg Int(std::int64_t v) { return Arg{.i = v}; }
  static Arg Real(double v) { return Arg{.d = v}; }
  static constexpr std::size_t kMaxArgs = 5;
  // Appends the text of a deferred reason built from its numbers.
  using Formatter = void (*)(const Arg* args, std::string* out);

  Status() = default;  // fits; costs nothing
  static Status Fits() { return Status(); }
  static Status Unfit(std::string reason) { return Status(Code::kUnfit, std::move(reason)); }
  static Status Unresolvable(std::string reason) {
    return Status(Code::kUnresolvable, std::move(reason));
  }
  static Status Error(std::string reason) { return Status(Code::kError, std::move(reason)); }
  // A failure whose reason is formatted only when it is read: the filters reject
  // thousands of nodes per request and most of those reasons are never read.
  // `format` must give the same text every time for the same numbers.
  static Status Deferred(Code code, Formatter format, std::initializer_list<Arg> args);

  bool ok() const { return code_ == Code::kFits; }
  Code code() const { return code_; }
  std::string reason() const;
  void AppendReason(std::string* out) const;
  // The tags before the reason's text ("gpufit: "), or the whole text when eager.
  const std::string& prefix() const { return reason_; }
  bool deferred() const { return format_ != nullptr; }
  // Fits, with nothing attached: what Status() is.
  bool bare_fits() const { return code_ == Code::kFits && !format_ && reason_.empty(); }

  // Prefixes the reason with the component that produced it ("gpufit: ...").
  Status& Tag(std::string_view who);

 private:
  Status(Code code, std::string reason) : code_(code), reason_(std::move(reason)) {}
  Code code_ = Code::kFits;
  Formatter format_ = nullptr;
  Arg args_[kMaxArgs];  // read only with format_; left unset otherwise (cheap Fits)
  std::string reason_;  // the text; with format_, only the tags before it
};

// A user-facing input error (config, pod, snapshot file). Thrown only while loading.
struct InputError {
  std::string message;
};

}  // namespace tidal
