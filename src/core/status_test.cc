#include "tidal/core/status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tidal {
namespace {

void PairReason(const Status::Arg* a, std::string* out) {
  *out += "need " + std::to_string(a[0].i) + ", have " + std::to_string(a[1].i);
}

TEST(Status, EagerAndDeferredReasonsReadTheSame) {
  struct Case {
    const char* name;
    Status status;
    std::vector<const char*> tags;  // applied in order
    Code want_code;
    const char* want;
  };
  const Case cases[] = {
      {"fits has no reason", Status::Fits(), {}, Code::kFits, ""},
      {"ok is the same success", Status::Ok(), {}, Code::kFits, ""},
      {"eager", Status::Unfit("need 4, have 2"), {}, Code::kUnfit, "need 4, have 2"},
      {"eager, tagged",
       Status::Unfit("need 4, have 2"),
       {"gpufit"},
       Code::kUnfit,
       "gpufit: need 4, have 2"},
      {"deferred",
       Status::Deferred(Code::kUnfit, PairReason, {Status::Int(4), Status::Int(2)}),
       {},
       Code::kUnfit,
       "need 4, have 2"},
      {"deferred, tagged",
       Status::Deferred(Code::kUnresolvable, PairReason, {Status::Int(4), Status::Int(2)}),
       {"gpufit"},
       Code::kUnresolvable,
       "gpufit: need 4, have 2"},
      {"deferred, tagged twice: the last tag comes first",
       Status::Deferred(Code::kUnfit, PairReason, {Status::Int(8), Status::Int(-1)}),
       {"inner", "outer"},
       Code::kUnfit,
       "outer: inner: need 8, have -1"},
      {"eager, tagged twice",
       Status::Error("boom"),
       {"inner", "outer"},
       Code::kError,
       "outer: inner: boom"},
      {"an empty tag changes nothing", Status::Unfit("x"), {""}, Code::kUnfit, "x"},
      {"eager text longer than the inline head",
       Status::Unresolvable("annotation ai.gpu-memory: \"12Zi\" is not a quantity"),
       {"cycle"},
       Code::kUnresolvable,
       "cycle: annotation ai.gpu-memory: \"12Zi\" is not a quantity"},
      {"tags that overflow the head keep their order",
       Status::Deferred(Code::kUnfit, PairReason, {Status::Int(1), Status::Int(0)}),
       {"gpufit", "fallback-stage-two", "a-rather-long-component-name", "outer"},
       Code::kUnfit,
       "outer: a-rather-long-component-name: fallback-stage-two: gpufit: need 1, have 0"},
      {"short eager text then a tag that overflows",
       Status::Error("boom"),
       {"twenty-characters-xx"},
       Code::kError,
       "twenty-characters-xx: boom"},
      {"a tag exactly filling the head",
       Status::Unfit(""),
       {"twenty-characters-x"},
       Code::kUnfit,
       "twenty-characters-x: "},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    Status s = tc.status;  // a copy keeps the deferred numbers
    for (const char* t : tc.tags) s.Tag(t);
    EXPECT_EQ(s.code(), tc.want_code);
    EXPECT_EQ(s.ok(), tc.want_code == Code::kFits);
    EXPECT_EQ(s.reason(), tc.want);
    std::string appended = "tidal: ";
    s.AppendReason(&appended);
    EXPECT_EQ(appended, std::string("tidal: ") + tc.want);
  }
}

TEST(Status, CopiesAndMovesKeepTheReason) {
  Status long_text = Status::Unfit(std::string(100, 'x')).Tag("gpufit");
  Status copy = long_text;
  Status assigned;
  assigned = copy;
  Status moved = std::move(copy);
  EXPECT_EQ(long_text.reason(), "gpufit: " + std::string(100, 'x'));
  EXPECT_EQ(assigned.reason(), long_text.reason());
  EXPECT_EQ(moved.reason(), long_text.reason());
  const Status& alias = assigned;
  assigned = alias;  // self-assignment keeps it
  EXPECT_EQ(assigned.reason(), long_text.reason());
  EXPECT_FALSE(moved.bare_fits());
  EXPECT_TRUE(Status().bare_fits());
  EXPECT_FALSE(Status().Tag("x").bare_fits());
}

}  // namespace
}  // namespace tidal
