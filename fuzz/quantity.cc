// Kubernetes quantities, the strict ai.gpu-reject-threshold decimal and config
// durations: no crash, errors name the field, and the three quantity entry points
// agree with each other and with FormatBytes.
#include "tidal/kubetypes/quantity.h"

#include <cmath>
#include <string>

#include "check.h"
#include "tidal/kubetypes/pod.h"
#include "tidal/policy/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = tidal::fuzz::AsText(data, size);
  std::string error;
  const auto value = tidal::ParseQuantity(text, "field.x", &error);
  if (!value) TIDAL_FUZZ_CHECK(error.find("field.x") != std::string::npos, "errors name the field");

  std::string error2;
  bool rounded = false;
  const auto same = tidal::ParseQuantityRounded(text, "f", &error2, &rounded);
  TIDAL_FUZZ_CHECK(same == value, "ParseQuantityRounded gives ParseQuantity's value");

  std::string error3;
  const auto milli = tidal::ParseQuantityMilli(text, "f", &error3);
  if (value && milli) {
    // Both round up: ceil(ceil(1000 x) / 1000) = ceil(x).
    const std::int64_t m = *milli;
    const std::int64_t from_milli =
        m >= 0 ? m / 1000 + (m % 1000 != 0) : -((-m) / 1000 + ((-m) % 1000 != 0));
    TIDAL_FUZZ_CHECK(from_milli == *value, "MilliValue and Value agree");
  }
  if (value && !rounded) {
    std::string e;
    const std::string shown = tidal::FormatBytes(*value);
    const auto back = tidal::ParseQuantity(shown, "f", &e);
    if (shown.find('.') == std::string::npos) {
      TIDAL_FUZZ_CHECK(back == value, "FormatBytes of a whole unit parses back exactly");
    } else if (back) {
      // One decimal of the unit: within 5 % (0.05 of the smallest shown, 1.0Ki).
      const long double diff = std::fabs(static_cast<long double>(*back) - *value);
      TIDAL_FUZZ_CHECK(diff <= std::fabs(static_cast<long double>(*value)) * 0.05L,
                       "FormatBytes is within 5 %");
    } else {
      // Only just under 8Ei can the rounded text ("8.0Ei") leave int64.
      TIDAL_FUZZ_CHECK(std::fabs(static_cast<long double>(*value)) > 7.9L * (1LL << 60),
                       "FormatBytes gives a quantity");
    }
  }

  std::string threshold_error;
  const auto threshold = tidal::ParseRejectThreshold(text, &threshold_error);
  if (threshold)
    TIDAL_FUZZ_CHECK(*threshold >= 0 && *threshold <= 1 && std::isfinite(*threshold),
                     "a reject threshold is in [0, 1]");
  else
    TIDAL_FUZZ_CHECK(threshold_error.find(tidal::kAnnotationRejectThreshold) != std::string::npos,
                     "a bad threshold names the annotation");

  const auto ms = tidal::ParseDurationMs(std::string(text));
  if (ms) TIDAL_FUZZ_CHECK(*ms >= 0, "durations are never negative");
  return 0;
}
