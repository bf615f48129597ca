#include "tidal/policy/memory_learner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "tidal/core/file.h"
#include "tidal/core/text.h"

namespace tidal {
namespace {

constexpr std::string_view kHeader = "# tidal learned GPU memory v1";
constexpr Bytes kMiB = Bytes{1} << 20;
constexpr Bytes kMaxPeak = Bytes{1} << 50;  // 1 PiB per GPU: anything above is corrupt

// Keys live on one line of the file: no tabs, newlines or other control bytes.
std::string Clean(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

std::string Repository(std::string_view image) {
  if (const std::size_t at = image.find('@'); at != std::string_view::npos)
    image = image.substr(0, at);
  const std::size_t slash = image.rfind('/');
  const std::size_t colon = image.rfind(':');
  // A colon after the last slash is a tag; one before it is a registry port.
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash))
    image = image.substr(0, colon);
  return std::string(image);
}

}  // namespace

std::string WorkloadKey(const PodDemand& pod) {
  std::string key = Clean(pod.namespace_name);
  key += '|';
  key += pod.images.empty() ? std::string() : Clean(Repository(pod.images.front()));
  key += '|';
  key += LoadTypeName(pod.load_type);
  key += '|';
  key += std::to_string(pod.model_size);
  key += '|';
  key += std::to_string(pod.gpu_count);
  return key;
}

void MemoryLearner::Observe(const std::string& key, Bytes peak_per_gpu) {
  if (peak_per_gpu <= 0 || peak_per_gpu > kMaxPeak) return;
  std::unique_lock lock(mu_);
  auto& q = peaks_[Clean(key)];
  q.push_back(peak_per_gpu);
  while (q.size() > static_cast<std::size_t>(config_.window)) q.pop_front();
  dirty_ = true;
}

std::optional<Bytes> MemoryLearner::Estimate(const std::string& key) const {
  std::shared_lock lock(mu_);
  const auto it = peaks_.find(key);
  if (it == peaks_.end() || it->second.size() < static_cast<std::size_t>(config_.min_samples))
    return std::nullopt;
  std::vector<Bytes> sorted(it->second.begin(), it->second.end());
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest peak with at least `quantile` of the peaks at or below it.
  const std::size_t n = sorted.size();
  const std::size_t rank =
      static_cast<std::size_t>(std::ceil(config_.quantile * static_cast<double>(n)));
  const Bytes q = sorted[std::clamp<std::size_t>(rank, 1, n) - 1];
  const double with_headroom = static_cast<double>(q) * (1 + config_.headroom);
  // The small slack keeps 1.1 × 100 GiB at 110 GiB rather than one MiB above it.
  const Bytes mib = static_cast<Bytes>(std::ceil(with_headroom / static_cast<double>(kMiB) - 1e-6));
  return mib * kMiB;
}

std::optional<Bytes> MemoryLearner::EstimateFor(const PodDemand& pod) const {
  if (pod.gpu_memory_declared || pod.gpu_count <= 0) return std::nullopt;
  return Estimate(WorkloadKey(pod));
}

std::size_t MemoryLearner::keys() const {
  std::shared_lock lock(mu_);
  return peaks_.size();
}

std::size_t MemoryLearner::samples(const std::string& key) const {
  std::shared_lock lock(mu_);
  const auto it = peaks_.find(key);
  return it == peaks_.end() ? 0 : it->second.size();
}

bool MemoryLearner::dirty() const {
  std::shared_lock lock(mu_);
  return dirty_;
}

std::string MemoryLearner::Serialize() {
  std::unique_lock lock(mu_);
  std::string out(kHeader);
  out += '\n';
  for (const auto& [key, q] : peaks_) {
    out += key;
    out += '\t';
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (i) out += ' ';
      out += std::to_string(q[i]);
    }
    out += '\n';
  }
  dirty_ = false;
  return out;
}

Status MemoryLearner::Load(std::string_view text) {
  std::map<std::string, std::deque<Bytes>> loaded;
  Lines lines(text);
  bool header = false;
  for (std::string_view line; lines.Next(&line);) {
    const int line_no = lines.number();
    const std::string where = "line " + std::to_string(line_no);
    if (!header) {
      if (line != kHeader)
        return Status::Error(where + ": expected the header \"" + std::string(kHeader) + "\"");
      header = true;
      continue;
    }
    if (line.empty()) continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos || tab == 0)
      return Status::Error(where + ": expected \"key<TAB>peak bytes ...\"");
    const std::string key(line.substr(0, tab));
    if (Clean(key) != key) return Status::Error(where + ": the key has a control character");
    if (loaded.count(key))
      return Status::Error(where + ": key \"" + key.substr(0, 80) + "\" repeated");
    std::deque<Bytes>& q = loaded[key];
    std::string_view rest = line.substr(tab + 1);
    while (!rest.empty()) {
      const std::size_t space = rest.find(' ');
      const std::string_view cell = rest.substr(0, space);
      Bytes v = 0;
      const auto r = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (r.ec != std::errc() || r.ptr != cell.data() + cell.size() || v <= 0 || v > kMaxPeak)
        return Status::Error(where + ": \"" + std::string(cell.substr(0, 24)) +
                             "\" is not a peak in bytes (1 to 2^50)");
      q.push_back(v);
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    if (q.empty()) return Status::Error(where + ": no peaks for \"" + key.substr(0, 80) + "\"");
    while (q.size() > static_cast<std::size_t>(config_.window)) q.pop_front();
  }
  if (!header) return Status::Error("line 1: expected the header \"" + std::string(kHeader) + "\"");
  std::unique_lock lock(mu_);
  peaks_ = std::move(loaded);
  dirty_ = false;
  return Status::Ok();
}

Status LoadLearnedMemory(const std::string& path, MemoryLearner* learner, std::string* warning) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return Status::Ok();
  std::string text;
  if (Status s = ReadRegularFile(path, kMaxDataFileBytes, &text); !s.ok()) return s;
  const auto no_data = [&](const std::string& why) {
    if (warning) *warning = path + ": " + why + "; starting with nothing learned";
    return Status::Ok();
  };
  if (text.empty()) return no_data("empty");
  const Status st = learner->Load(text);
  if (st.ok()) return st;
  // Our header, then a line cut short: a save that never reached the disk.
  if (text.rfind(std::string(kHeader) + "\n", 0) == 0)
    return no_data("truncated (" + st.reason() + ")");
  return Status::Error(path + ": " + st.reason());
}

Status SaveLearnedMemory(const std::string& path, MemoryLearner* learner) {
  const std::string text = learner->Serialize();
  const std::string tmp = path + ".tmp";
  // Written and fsynced before the rename: after a crash the file is the old one
  // or the new one, never a new name over data still in the page cache.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(tmp + ": cannot write: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::Error(tmp + ": cannot write: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Status::Error(tmp + ": cannot sync: " + why);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::Error(path + ": cannot replace: " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace tidal
