// What the rebalancer reads: the move annotations (values from the input,
// separated by NUL bytes), a Pod object, a PodDisruptionBudget and an RFC 3339
// time. Each either decodes into something in range or says why not.
#include <array>
#include <string>

#include "check.h"
#include "tidal/rebalance/pods.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = tidal::fuzz::AsText(data, size);
  constexpr std::array<std::string_view, 7> keys = {tidal::rebalance::kMigratableAnnotation,
                                                    tidal::rebalance::kCheckpointIntervalAnnotation,
                                                    tidal::rebalance::kStartupAnnotation,
                                                    tidal::kAnnotationGpus,
                                                    tidal::rebalance::kExpectedDurationAnnotation,
                                                    tidal::rebalance::kExpectedEndAnnotation,
                                                    tidal::rebalance::kIoShareAnnotation};
  tidal::Labels annotations;
  std::size_t start = 0;
  for (std::size_t k = 0; k < keys.size() && start <= text.size(); ++k) {
    const std::size_t end = std::min(text.find('\0', start), text.size());
    annotations[std::string(keys[k])] = std::string(text.substr(start, end - start));
    start = end + 1;
  }
  tidal::rebalance::MoveTraits traits;
  const tidal::Status st = tidal::rebalance::ParseMoveTraits(annotations, 60'000, &traits);
  if (st.ok()) {
    TIDAL_FUZZ_CHECK(traits.startup_ms >= 0, "start-up is not negative");
    TIDAL_FUZZ_CHECK(!traits.checkpoint_interval_ms || *traits.checkpoint_interval_ms > 0,
                     "a checkpoint interval is positive");
    const tidal::TimeMs lost =
        tidal::rebalance::WorkLostMs(3'600'000, traits.checkpoint_interval_ms);
    TIDAL_FUZZ_CHECK(lost >= 0 && lost <= 3'600'000, "work lost is within the pod's age");
    TIDAL_FUZZ_CHECK(!traits.io_share || (*traits.io_share >= 0 && *traits.io_share <= 1),
                     "an IO share is a share");
    const auto left =
        tidal::rebalance::EstimateRemaining(traits, 3'600'000, 1'800'000'000'000, 1'800'000);
    TIDAL_FUZZ_CHECK(left.ms >= 0 && left.ms <= 1'800'000 && left.ms <= left.uncapped_ms,
                     "the remaining run is within the horizon");
  } else {
    TIDAL_FUZZ_CHECK(st.reason().find("annotation tidal.io/") != std::string::npos,
                     "errors name the annotation");
  }
  tidal::rebalance::PodInfo pod;
  const tidal::Status ps = tidal::rebalance::DecodePodInfo(text, &pod);
  if (ps.ok()) {
    TIDAL_FUZZ_CHECK(pod.demand.gpu_count >= 0, "no negative GPUs");
  } else {
    TIDAL_FUZZ_CHECK(!ps.reason().empty(), "errors say why");
  }
  tidal::rebalance::DisruptionBudget budget;
  const tidal::Status bs = tidal::rebalance::DecodeDisruptionBudget(text, &budget);
  if (bs.ok())
    TIDAL_FUZZ_CHECK(!budget.name.empty() && budget.disruptions_allowed >= 0,
                     "a budget has a name and a count");
  if (const auto ms = tidal::rebalance::ParseRfc3339Ms(text))
    TIDAL_FUZZ_CHECK(text.size() >= 20, "a time has all its fields");
  return 0;
}
