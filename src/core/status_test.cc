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
      {"eager", Status::Unfit("need 4, have 2"), {}, Code::kUnfit, "need 4, have 2"},
      {"eager, tagged", Status::Unfit("need 4, have 2"), {"gpufit"}, Code::kUnfit,
       "gpufit: need 4, have 2"},
      {"deferred", Status::Deferred(Code::kUnfit, PairReason, {Status::Int(4), Status::Int(2)}), {},
       Code::kUnfit, "need 4, have 2"},
      {"deferred, tagged", Status::Deferred(Code::kUnresolvable, PairReason,
                                            {Status::Int(4), Status::Int(2)}),
       {"gpufit"}, Code::kUnresolvable, "gpufit: need 4, have 2"},
      {"deferred, tagged twice: the last tag comes first",
       Status::Deferred(Code::kUnfit, PairReason, {Status::Int(8), Status::Int(-1)}),
       {"inner", "outer"}, Code::kUnfit, "outer: inner: need 8, have -1"},
      {"eager, tagged twice", Status::Error("boom"), {"inner", "outer"}, Code::kError,
       "outer: inner: boom"},
      {"an empty tag changes nothing", Status::Unfit("x"), {""}, Code::kUnfit, "x"},
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

}  // namespace
}  // namespace tidal
