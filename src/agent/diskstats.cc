#include "tidal/agent/diskstats.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "tidal/core/text.h"

namespace tidal::agent {
namespace {

constexpr std::size_t kQuoteMax = 60;  // keeps messages about garbage input readable

std::string Quote(std::string_view line) {
  if (line.size() > kQuoteMax) return std::string(line.substr(0, kQuoteMax)) + "...";
  return std::string(line);
}

std::vector<std::string_view> SplitWs(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const std::size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

template <typename T>
bool ParseUnsigned(std::string_view s, T* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

constexpr const char* kFieldNames[17] = {
    "reads completed",  "reads merged",      "sectors read",          "ms reading",
    "writes completed", "writes merged",     "sectors written",       "ms writing",
    "I/Os in progress", "ms doing I/O",      "weighted ms doing I/O", "discards completed",
    "discards merged",  "sectors discarded", "ms discarding",         "flushes completed",
    "ms flushing"};

// Field 9 (index 8) is the only instantaneous one.
constexpr std::size_t kInFlight = 8;
constexpr std::uint64_t kWrap32 = std::uint64_t{1} << 32;

}  // namespace

Status ParseDiskstats(std::string_view text, std::vector<DiskCounters>* out) {
  out->clear();
  Status first;
  Lines lines(text);
  for (std::string_view line; lines.Next(&line);) {
    const int line_no = lines.number();
    const auto cols = SplitWs(line);
    if (cols.empty()) continue;
    auto fail = [&](const std::string& why) {
      if (first.ok())
        first = Status::Error("diskstats line " + std::to_string(line_no) + " \"" + Quote(line) +
                              "\": " + why);
    };
    const std::size_t nstat = cols.size() >= 3 ? cols.size() - 3 : 0;
    if (nstat != 4 && nstat != 11 && nstat != 15 && nstat != 17) {
      fail("expected 7, 14, 18 or 20 columns, found " + std::to_string(cols.size()));
      continue;
    }
    DiskCounters d;
    if (!ParseUnsigned(cols[0], &d.major) || !ParseUnsigned(cols[1], &d.minor)) {
      fail("major and minor must be unsigned integers");
      continue;
    }
    d.name = std::string(cols[2]);
    bool ok = true;
    for (std::size_t i = 0; i < nstat; ++i) {
      std::uint64_t v = 0;
      if (!ParseUnsigned(cols[3 + i], &v)) {
        fail(std::string("field ") + std::to_string(i + 1) + " (" +
             (nstat == 4 ? "partition counter" : kFieldNames[i]) + ") is not an unsigned integer");
        ok = false;
        break;
      }
      d.f[i] = v;
    }
    if (!ok) continue;
    if (nstat == 4) {
      // Pre-2.6.25 partitions: reads, sectors read, writes, sectors written.
      const auto raw = d.f;
      d.f = {};
      d.f[0] = raw[0];
      d.f[2] = raw[1];
      d.f[4] = raw[2];
      d.f[6] = raw[3];
    }
    d.fields = static_cast<int>(nstat);
    out->push_back(std::move(d));
  }
  return first;
}

Status ComputeIoStats(const DiskCounters& prev, const DiskCounters& cur, double interval_ms,
                      IoStats* out) {
  if (!(interval_ms > 0)) return Status::Error(cur.name + ": interval must be positive");
  std::array<double, 17> d{};
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i == kInFlight) continue;
    const std::uint64_t a = prev.f[i];
    const std::uint64_t b = cur.f[i];
    if (b >= a) {
      d[i] = static_cast<double>(b - a);
      continue;
    }
    // A 32-bit counter (times are printed as unsigned int) that wrapped: the
    // unwrapped step must be plausible, otherwise the device was reset.
    const std::uint64_t wrapped = b + kWrap32 - a;
    if (a < kWrap32 && wrapped < kWrap32 / 2) {
      d[i] = static_cast<double>(wrapped);
      continue;
    }
    return Status::Error(cur.name + ": counter '" + kFieldNames[i] + "' went backwards (" +
                         std::to_string(a) + " -> " + std::to_string(b) +
                         "), device reset; skipped this interval");
  }
  const double dt_s = interval_ms / 1000.0;
  IoStats s;
  s.r_per_s = d[0] / dt_s;
  s.w_per_s = d[4] / dt_s;
  s.rkb_per_s = d[2] / 2 / dt_s;
  s.wkb_per_s = d[6] / 2 / dt_s;
  s.r_await_ms = d[0] > 0 ? d[3] / d[0] : 0;
  s.w_await_ms = d[4] > 0 ? d[7] / d[4] : 0;
  const double ios = d[0] + d[4] + d[11];
  s.await_ms = ios > 0 ? (d[3] + d[7] + d[14]) / ios : 0;
  s.aqu_sz = d[10] / interval_ms;
  // Busy time cannot exceed wall time; jiffy rounding can push it a little over.
  s.util_pct = std::min(100.0, d[9] / interval_ms * 100);
  *out = s;
  return Status();
}

bool IsDefaultDevice(std::string_view name, bool include_dm) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  if (name.empty()) return false;
  if (starts("loop") || starts("ram") || starts("zram") || starts("sr") || starts("fd"))
    return false;
  if (starts("dm-")) return include_dm;
  const bool ends_digit = std::isdigit(static_cast<unsigned char>(name.back())) != 0;
  // nvme0n1 / mmcblk0 / md0 are whole devices; nvme0n1p1 / mmcblk0p1 are partitions.
  if (starts("nvme") || starts("mmcblk") || starts("nbd") || starts("md")) {
    const std::size_t p = name.rfind('p');
    if (p != std::string_view::npos && p + 1 < name.size() && p > 0 &&
        std::isdigit(static_cast<unsigned char>(name[p - 1])) != 0) {
      return !std::all_of(name.begin() + static_cast<std::ptrdiff_t>(p) + 1, name.end(),
                          [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    }
    return true;
  }
  // sda, vda, xvda, hda: a trailing digit means a partition.
  return !ends_digit;
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view o = s.substr(i + 1, 3);
      if (std::all_of(o.begin(), o.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>((o[0] - '0') * 64 + (o[1] - '0') * 8 + (o[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool UnderMount(std::string_view path, std::string_view mount) {
  if (mount == "/") return !path.empty() && path[0] == '/';
  if (path.substr(0, mount.size()) != mount) return false;
  return path.size() == mount.size() || path[mount.size()] == '/';
}

}  // namespace

Status MountDevices(std::string_view mountinfo, const std::vector<std::string>& paths,
                    std::vector<std::pair<unsigned, unsigned>>* out) {
  out->clear();
  struct Mount {
    std::string point;
    unsigned major, minor;
  };
  std::vector<Mount> mounts;
  Lines lines(mountinfo);
  for (std::string_view line; lines.Next(&line);) {
    const int line_no = lines.number();
    const auto cols = SplitWs(line);
    if (cols.empty()) continue;
    if (cols.size() < 5) {
      return Status::Error("mountinfo line " + std::to_string(line_no) + " \"" + Quote(line) +
                           "\": expected at least 5 columns");
    }
    const std::string_view dev = cols[2];
    const std::size_t colon = dev.find(':');
    Mount m;
    if (colon == std::string_view::npos || !ParseUnsigned(dev.substr(0, colon), &m.major) ||
        !ParseUnsigned(dev.substr(colon + 1), &m.minor)) {
      return Status::Error("mountinfo line " + std::to_string(line_no) + " \"" + Quote(line) +
                           "\": column 3 is not major:minor");
    }
    m.point = Unescape(cols[4]);
    mounts.push_back(std::move(m));
  }
  for (const std::string& path : paths) {
    const Mount* best = nullptr;
    // Later lines mount over earlier ones at the same point.
    for (const Mount& m : mounts)
      if (UnderMount(path, m.point) && (!best || m.point.size() >= best->point.size())) best = &m;
    if (!best) return Status::Error("mount path " + path + ": no filesystem in mountinfo holds it");
    const std::pair<unsigned, unsigned> id{best->major, best->minor};
    if (std::find(out->begin(), out->end(), id) == out->end()) out->push_back(id);
  }
  return Status();
}

}  // namespace tidal::agent
