#pragma once
// Status: the result type of the policy path. Codes form a small closed set;
// exceptions are used only at start-up and config load.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace tidal {

enum class Code : unsigned char {
  kFits = 0,      // the pod fits (OK)
  kUnfit,         // does not fit now; may fit later or after preemption
  kUnresolvable,  // will not fit whatever happens (bad annotation, too many GPUs)
  kError,         // an internal error; the node verdict is unknown
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

  // User-provided, so that Status() is not value-initialised: that would zero
  // args_, a second cache line of every NodeResult, for each node that fits.
  Status() noexcept {}  // fits
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&& other) noexcept : in_(other.in_), tail_(std::move(other.tail_)) {
    std::memcpy(args_, other.args_, sizeof args_);  // bytes: unset args are not read
  }
  Status& operator=(Status&& other) noexcept {
    in_ = other.in_;
    tail_ = std::move(other.tail_);
    std::memcpy(args_, other.args_, sizeof args_);
    return *this;
  }
  ~Status() = default;

  // Success that is not a placement verdict: a decode, a file read, a request.
  static Status Ok() { return Status(); }
  // The verdict that the pod fits (filters, the runner, Place).
  static Status Fits() { return Status(); }
  static Status Unfit(std::string_view reason) { return Status(Code::kUnfit, reason); }
  static Status Unresolvable(std::string_view reason) {
    return Status(Code::kUnresolvable, reason);
  }
  static Status Error(std::string_view reason) { return Status(Code::kError, reason); }
  // A failure whose reason is formatted only when it is read: the filters reject
  // thousands of nodes per request and most of those reasons are never read.
  // `format` must give the same text every time for the same numbers.
  static Status Deferred(Code code, Formatter format, std::initializer_list<Arg> args) {
    Status s;  // inline: the filters build one per rejected node
    s.in_.code = code;
    s.in_.format = format;
    std::size_t k = 0;
    for (const Arg& a : args) {
      if (k == kMaxArgs) break;
      s.args_[k++] = a;
    }
    return s;
  }

  bool ok() const { return in_.code == Code::kFits; }
  Code code() const { return in_.code; }
  std::string reason() const;
  void AppendReason(std::string* out) const;
  bool deferred() const { return in_.format != nullptr; }
  // Fits, with nothing attached: what Status() is.
  bool bare_fits() const {
    return in_.code == Code::kFits && in_.head_len == 0 && !in_.format && !tail_;
  }

  // Back to Status(), without a branch on what it held.
  void Reset() {
    in_.code = Code::kFits;
    in_.head_len = 0;
    in_.format = nullptr;
    tail_.reset();
  }

  // Prefixes the reason with the component that produced it ("gpufit: ...").
  // The runner tags every node it rejects, so a short tag costs no allocation.
  Status& Tag(std::string_view who) {
    // The common case, inline: the first tag of a deferred reason.
    if (in_.head_len == 0 && !who.empty() && who.size() + 2 <= kHead) {
      std::memcpy(in_.head, who.data(), who.size());
      in_.head[who.size()] = ':';
      in_.head[who.size() + 1] = ' ';
      in_.head_len = static_cast<unsigned char>(who.size() + 2);
      return *this;
    }
    return TagSlow(who);
  }

 private:
  Status(Code code, std::string_view reason);
  Status& TagSlow(std::string_view who);
  // The reason reads head + *tail_ + format(args_). Tags and short eager texts
  // live in the head; what does not fit moves to the heap in tail_ (cold: eager
  // reasons are rare on the hot path, deferred ones carry only their tags).
  // kHead holds one tag ("resourcefit: " is 13 bytes).
  static constexpr std::size_t kHead = 14;
  // What Reset writes comes first (in_ and tail_, 32 bytes), so that a NodeResult
  // of a node that fits touches one cache line; args_ is written only by Deferred.
  struct Inline {
    Code code = Code::kFits;
    unsigned char head_len = 0;
    char head[kHead];  // read only up to head_len
    Formatter format = nullptr;
  };
  Inline in_;
  std::unique_ptr<std::string> tail_;  // null when the head holds everything
  Arg args_[kMaxArgs];                 // read only with format; left unset otherwise
};
static_assert(sizeof(Status) <= 72, "Status is copied once per rejected node");

// A user-facing input error (config, pod, snapshot file). Thrown only while loading.
struct InputError {
  std::string message;
};

}  // namespace tidal
