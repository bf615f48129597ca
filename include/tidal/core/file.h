#pragma once
// Reading a file named by a user or by the system (procfs, sysfs) without the
// ways it can go wrong: a directory, FIFO, socket or device given by mistake, a
// file that never ends (/dev/zero) or is far larger than any sane input. Each is
// an error that names the path and what was expected; nothing blocks, and at
// most `max_bytes` are held.
#include <cstddef>
#include <string>

#include "tidal/core/status.h"

namespace tidal {

// Limits for the inputs the commands read whole.
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{16} << 20;  // YAML, tokens, PEM
inline constexpr std::size_t kMaxDataFileBytes = std::size_t{1} << 30;     // traces, snapshots
inline constexpr std::size_t kMaxKernelFileBytes = std::size_t{4} << 20;   // procfs, sysfs

// Reads the whole regular file at `path` into `out`. Errors (Status::Error,
// reason starting with the path): missing or unreadable, not a regular file
// (what it is instead), or more than `max_bytes`. procfs and sysfs files, whose
// size reads 0, are read up to the limit.
Status ReadRegularFile(const std::string& path, std::size_t max_bytes, std::string* out);

// ReadRegularFile, throwing InputError (for start-up and config load).
std::string ReadRegularFileOrThrow(const std::string& path, std::size_t max_bytes);

}  // namespace tidal
