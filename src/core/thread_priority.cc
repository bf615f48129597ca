#include "tidal/core/thread_priority.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tidal {
namespace {

// setpriority(PRIO_PROCESS, tid) addresses one thread on Linux.
id_t ThisThreadId() { return static_cast<id_t>(::syscall(SYS_gettid)); }

}  // namespace

int ThisThreadsNice() {
  errno = 0;
  return ::getpriority(PRIO_PROCESS, ThisThreadId());
}

std::string LowerThisThreadsPriority(int increment) {
  if (increment < 1 || increment > 19)
    return fmt::format("nice increment {} is out of range: expected 1 to 19", increment);
  const int target = std::min(19, ThisThreadsNice() + increment);
  if (::setpriority(PRIO_PROCESS, ThisThreadId(), target) != 0)
    return fmt::format("could not set this thread's nice value to {}: {}", target,
                       std::strerror(errno));
  return {};
}

}  // namespace tidal
