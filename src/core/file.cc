#include "tidal/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tidal {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

std::string Limit(std::size_t bytes) {
  if (bytes % (std::size_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes % (std::size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Status ReadRegularFile(const std::string& path, std::size_t max_bytes, std::string* out) {
  out->clear();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked
  // on the open descriptor, so it cannot change in between.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) return Status::Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return Status::Error(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Status::Error(path + ": is " + std::string(KindOf(st.st_mode)) +
                         ", expected a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_bytes)
    return Status::Error(path + ": is " + std::to_string(st.st_size) +
                         " bytes, over the limit of " + Limit(max_bytes));
  // procfs and sysfs report size 0: read in chunks up to the limit.
  out->resize(st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096);
  std::size_t got = 0;
  for (;;) {
    if (got == out->size()) {
      if (got > max_bytes) break;
      out->resize(std::min(max_bytes + 1, 2 * out->size()));
    }
    const ssize_t n = ::read(fd.get(), out->data() + got, out->size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      out->clear();
      return Status::Error(path + ": read error: " + why);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes) {
    out->clear();
    return Status::Error(path + ": more than " + Limit(max_bytes) + ", over the limit");
  }
  out->resize(got);
  return Status::Ok();
}

std::string ReadRegularFileOrThrow(const std::string& path, std::size_t max_bytes) {
  std::string text;
  if (const Status s = ReadRegularFile(path, max_bytes, &text); !s.ok())
    throw InputError{s.reason()};
  return text;
}

}  // namespace tidal
