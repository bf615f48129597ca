#include "tidal/core/file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace tidal {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "tidal-file-test-" + std::to_string(::getpid()) + "-" + name;
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ReadRegularFile, ReadsOrNamesThePathAndWhatWasExpected) {
  const std::string fifo = TempPath("fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string dir = TempPath("dir");
  ::mkdir(dir.c_str(), 0700);
  struct Case {
    const char* name;
    std::string path;
    std::size_t limit;
    bool ok;
    std::string text_or_error;
  };
  const Case cases[] = {
      {"a small file", Write("small", "abc\n"), 64, true, "abc\n"},
      {"an empty file", Write("empty", ""), 64, true, ""},
      {"exactly at the limit", Write("at", std::string(64, 'x')), 64, true, std::string(64, 'x')},
      {"one byte over", Write("over", std::string(65, 'x')), 64, false,
       "over the limit of 64 bytes"},
      {"missing", TempPath("missing"), 64, false, "cannot open: No such file or directory"},
      {"a directory", dir, 64, false, "is a directory, expected a regular file"},
      {"a FIFO (no writer: must not block)", fifo, 64, false, "is a FIFO, expected a regular file"},
      {"/dev/zero (never ends)", "/dev/zero", 1 << 20, false,
       "is a character device, expected a regular file"},
      {"procfs (size 0, read to the end)", "/proc/self/status", 1 << 20, true, "Name:"},
      {"procfs over its limit", "/proc/self/status", 16, false, "more than 16 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string text;
    const Status s = ReadRegularFile(c.path, c.limit, &text);
    EXPECT_EQ(s.ok(), c.ok) << s.reason();
    if (c.ok) {
      EXPECT_NE(text.find(c.text_or_error), std::string::npos);
      if (c.path.rfind("/proc", 0) != 0) {
        EXPECT_EQ(text, c.text_or_error);
      }
    } else {
      EXPECT_EQ(s.reason().rfind(c.path + ": ", 0), 0u) << s.reason();
      EXPECT_NE(s.reason().find(c.text_or_error), std::string::npos) << s.reason();
      EXPECT_TRUE(text.empty());
    }
  }
  std::remove(fifo.c_str());
  ::rmdir(dir.c_str());
}

TEST(ReadRegularFile, OrThrowThrowsAnInputErrorNamingThePath) {
  try {
    ReadRegularFileOrThrow("/dev/null", 10);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message, "/dev/null: is a character device, expected a regular file");
  }
}

}  // namespace
}  // namespace tidal
