#include "tidal/core/thread_priority.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace tidal {
namespace {

TEST(ThreadPriority, LowersOnlyTheCallingThread) {
  const int before = ThisThreadsNice();
  int in_thread = -100;
  std::string error;
  std::thread t([&] {
    error = LowerThisThreadsPriority(5);
    in_thread = ThisThreadsNice();
  });
  t.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(in_thread, std::min(19, before + 5));
  EXPECT_EQ(ThisThreadsNice(), before);  // the caller's thread is untouched
}

TEST(ThreadPriority, RejectsAnIncrementOutOfRange) {
  const struct {
    const char* name;
    int increment;
  } cases[] = {{"zero", 0}, {"negative: would raise priority", -5}, {"over 19", 20}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const int before = ThisThreadsNice();
    EXPECT_NE(LowerThisThreadsPriority(c.increment).find("out of range"), std::string::npos);
    EXPECT_EQ(ThisThreadsNice(), before);
  }
}

}  // namespace
}  // namespace tidal
