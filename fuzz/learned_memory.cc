// The memoryLearning file: a failed load changes nothing and names the line; a
// file that loads serializes to text that loads to the same text again.
#include "check.h"
#include "tidal/policy/memory_learner.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tidal::MemoryLearningConfig config;
  config.window = 8;
  tidal::MemoryLearner learner(config);
  learner.Observe("kept", 1 << 20);
  const tidal::Status st = learner.Load(tidal::fuzz::AsText(data, size));
  if (!st.ok()) {
    TIDAL_FUZZ_CHECK(st.reason().starts_with("line "), "errors name the line");
    TIDAL_FUZZ_CHECK(learner.samples("kept") == 1, "a failed load changes nothing");
    return 0;
  }
  const std::string once = learner.Serialize();
  tidal::MemoryLearner again(config);
  TIDAL_FUZZ_CHECK(again.Load(once).ok(), "what was saved loads");
  TIDAL_FUZZ_CHECK(again.Serialize() == once, "save, load, save is stable");
  return 0;
}
