// Trace CSV files: the CSV reader, then every loader on the same text (each
// expects its own header, so most inputs stop at the header check). A malformed
// file is an InputError; nothing else may escape.
#include "check.h"
#include "tidal/core/status.h"
#include "tidal/sim/traces/csv.h"
#include "tidal/sim/traces/traces.h"

namespace {

template <class F>
void Try(const std::string& text, F load) {
  try {
    const tidal::sim::traces::Csv csv = tidal::sim::traces::Csv::FromText("fuzz.csv", text);
    load(csv);
  } catch (const tidal::InputError& e) {
    TIDAL_FUZZ_CHECK(!e.message.empty(), "an input error says what is wrong");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(tidal::fuzz::AsText(data, size));
  using namespace tidal::sim::traces;
  Try(text, [](const Csv& c) { (void)LoadOpenbNodes(c); });
  Try(text, [](const Csv& c) { (void)LoadOpenbPods(c); });
  Try(text, [](const Csv& c) { (void)LoadPhillyJobs(c); });
  Try(text, [](const Csv& c) { (void)LoadPhillyVcs(c); });
  Try(text, [](const Csv& c) { (void)LoadDlrm(c); });
  Try(text, [](const Csv& c) { (void)LoadPaiMachines(c); });
  Try(text, [](const Csv& c) { (void)LoadSpotNodes(c); });
  Try(text, [](const Csv& c) { (void)LoadFgdSummary(c); });
  Try(text, [](const Csv& c) { (void)LoadGenaiUsage(c, c); });
  return 0;
}
