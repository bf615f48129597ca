#include "policy/plugins/loadaware/loadaware.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tidal/policy/yaml_util.h"

namespace tidal {
namespace {

// Exactly rounded fixed notation with 0 to 2 decimals, from the binary value in
// integers: x = m·2^e, so x·10^p = m·10^p·2^e, rounded half to even as fmt and
// std::to_chars do. About a tenth of the cost of to_chars with a precision, which
// the extender pays for every rejected node. Writes at most 20 characters and
// returns the end, or nullptr outside [0, 1e13).
template <int kPrecision>
char* WriteFixedExactAt(char* p, double x) {
  // The scale is a constant: the divisions below compile to multiplications.
  constexpr std::uint64_t scale = kPrecision == 0 ? 1 : kPrecision == 1 ? 10 : 100;
  if (!(x >= 0 && x < 1e13) || std::signbit(x)) return nullptr;
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>(bits >> 52);
  if (biased == 0 && x != 0) return nullptr;  // subnormal
  std::uint64_t q = 0;
  if (x != 0) {
    const std::uint64_t m = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
    const int e = biased - 1075;        // x < 1e13 < 2^52: e < 0
    const std::uint64_t n = m * scale;  // < 2^60
    if (-e < 61) {
      const int sh = -e;
      q = n >> sh;
      const std::uint64_t rem = n & ((std::uint64_t{1} << sh) - 1);
      const std::uint64_t half = std::uint64_t{1} << (sh - 1);
      if (rem > half || (rem == half && (q & 1))) ++q;
    }  // else n·2^e < 2^60·2^-61: below a half, rounds to 0
  }
  p = std::to_chars(p, p + 16, q / scale).ptr;  // q / scale < 1e13: 13 digits
  if constexpr (kPrecision > 0) {
    *p++ = '.';
    std::uint64_t frac = q % scale;
    for (int d = kPrecision - 1; d >= 0; --d) {
      p[d] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    p += kPrecision;
  }
  return p;
}

char* WriteFixedExact(char* p, double x, int precision) {
  switch (precision) {
    case 0:
      return WriteFixedExactAt<0>(p, x);
    case 1:
      return WriteFixedExactAt<1>(p, x);
    case 2:
      return WriteFixedExactAt<2>(p, x);
    default:
      return nullptr;
  }
}

bool AppendFixedExact(std::string& out, double x, int precision) {
  char buf[24];
  char* end = WriteFixedExact(buf, x, precision);
  if (!end) return false;
  out.append(buf, end);
  return true;
}

// Same text as fmt "{:.{precision}f}".
void AppendFixed(std::string& out, double x, int precision) {
  if (AppendFixedExact(out, x, precision)) return;
  if (!std::isfinite(x)) {
    out += fmt::format("{:.{}f}", x, precision);  // "inf", "nan": keep fmt's spelling
    return;
  }
  // std::to_chars prints the exactly rounded value, as fmt does.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, precision);
  if (r.ec == std::errc()) {
    out.append(buf, r.ptr);
  } else {
    out += fmt::format("{:.{}f}", x, precision);  // longer than 64 characters
  }
}

// "{:.0f}%" of the rounded percentage.
void AppendPercent(std::string& out, double fraction) {
  AppendFixed(out, std::floor(fraction * 100 + 0.5), 0);
  out += '%';
}

char* Copy(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// prefix + a + middle + b + suffix.
void AppendMessage(std::string* out, std::string_view prefix, double a, std::string_view middle,
                   double b, std::string_view suffix, int precision, bool percent) {
  // Usually assembled on the stack and appended once.
  char buf[160];
  if (prefix.size() + middle.size() + suffix.size() + 2 * 21 <= sizeof buf) {
    const double va = percent ? std::floor(a * 100 + 0.5) : a;
    const double vb = percent ? std::floor(b * 100 + 0.5) : b;
    const int digits = percent ? 0 : precision;
    char* p = Copy(buf, prefix);
    p = WriteFixedExact(p, va, digits);
    if (p && percent) *p++ = '%';
    if (p) p = Copy(p, middle);
    if (p) p = WriteFixedExact(p, vb, digits);
    if (p && percent) *p++ = '%';
    if (p) {
      p = Copy(p, suffix);
      out->append(buf, p);
      return;
    }
  }
  *out += prefix;
  percent ? AppendPercent(*out, a) : AppendFixed(*out, a, precision);
  *out += middle;
  percent ? AppendPercent(*out, b) : AppendFixed(*out, b, precision);
  *out += suffix;
}

// The reasons are deferred (Status::Deferred): formatted only if read. Same text as fmt
// "GPU memory {pct} over reject threshold {pct}" etc.
void GpuMemoryReason(const Status::Arg* a, std::string* out) {
  AppendMessage(out, "GPU memory ", a[0].d, " over reject threshold ", a[1].d, "", 0, true);
}
void NvlinkReason(const Status::Arg* a, std::string* out) {
  AppendMessage(out, "NVLink load ", a[0].d, " over reject threshold ", a[1].d, "", 2, false);
}
void AwaitReason(const Status::Arg* a, std::string* out) {
  AppendMessage(out, "storage await ", a[0].d, " ms over reject threshold ", a[1].d, " ms", 1,
                false);
}

}  // namespace

Status LoadAware::FilterOne(const CycleState& cycle, const NodeState& node, NodeScratch&) const {
  // Unknown is not idle: without the node's own series there is nothing to reject on.
  if (!node.metrics_known) return Status::Fits();
  const EffectiveThresholds& t = cycle.thresholds;
  if (node.load.gpu_memory > t.gpu_memory.reject)
    return Status::Deferred(
        Code::kUnfit, GpuMemoryReason,
        {Status::Real(node.load.gpu_memory), Status::Real(t.gpu_memory.reject)});
  if (cycle.uses_nvlink && node.load.nvlink > t.nvlink.reject)
    return Status::Deferred(Code::kUnfit, NvlinkReason,
                            {Status::Real(node.load.nvlink), Status::Real(t.nvlink.reject)});
  if (node.load.await_ms > t.await_ms.reject)
    return Status::Deferred(Code::kUnfit, AwaitReason,
                            {Status::Real(node.load.await_ms), Status::Real(t.await_ms.reject)});
  return Status::Fits();
}

double LoadAware::Penalty(const CycleState& cycle, const NodeState& node) const {
  const EffectiveThresholds& t = cycle.thresholds;
  // The score reads the forecast when there is one; the filter above never does.
  LoadVector load = node.load;
  if (node.has_load_trend) {
    load.gpu_memory = std::max(0.0, load.gpu_memory + node.load_trend.gpu_memory);
    load.nvlink = std::max(0.0, load.nvlink + node.load_trend.nvlink);
    load.await_ms = std::max(0.0, load.await_ms + node.load_trend.await_ms);
  }
  const double p_mem = BandPosition(load.gpu_memory, t.gpu_memory);
  // NVLink load only costs pods that use NVLink, as in the filter.
  const double p_nvl = cycle.uses_nvlink ? BandPosition(load.nvlink, t.nvlink) : 0.0;
  const double p_io = BandPosition(load.await_ms, t.await_ms);
  return args_.weights.Combine(p_mem, p_nvl, p_io);
}

double LoadAware::ScoreOne(const CycleState& cycle, const NodeState& node,
                           const NodeScratch&) const {
  if (!node.metrics_known) return args_.unknown_node_score;
  return 100.0 * (1.0 - Penalty(cycle, node));
}

std::unique_ptr<Plugin> NewLoadAware(const YAML::Node& args, const std::string& path,
                                     ConfigErrors& errors) {
  return yamlutil::BuildFromArgs<LoadAware, LoadAwareArgs>(args, path, errors);
}

}  // namespace tidal
