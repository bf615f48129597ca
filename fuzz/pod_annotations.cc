// The ai.* annotations and env values of a pod, each taken from the input (values
// separated by NUL bytes), through ToPodDemand and the threshold resolution of a
// namespace whose pods may move their threshold only up to 0.80.
#include <array>

#include "pod_checks.h"

namespace {

constexpr std::array<std::string_view, 5> kAnnotations = {
    tidal::kAnnotationGpuMemory, tidal::kAnnotationModelSize, tidal::kAnnotationRejectThreshold,
    tidal::kAnnotationNvlinkRequired, tidal::kAnnotationAutoNvlink};

const tidal::PolicyConfig& TenantConfig() {
  static const tidal::PolicyConfig config = [] {
    tidal::PolicyConfig c = tidal::DefaultPolicyConfig();
    tidal::TenantConfig t;
    t.namespace_name = "team-a";
    t.thresholds = c.thresholds;
    t.pod_threshold_min = 0.50;
    t.pod_threshold_max = 0.80;
    c.tenants.push_back(t);
    return c;
  }();
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest = tidal::fuzz::AsText(data, size);
  tidal::RawPod pod;
  pod.namespace_name = "team-a";
  pod.name = "p";
  tidal::RawContainer c;
  c.name = "main";
  // Each field present only when its slot has a value, so absence is fuzzed too.
  const auto next = [&rest](std::string_view* out) {
    if (rest.empty()) return false;
    auto [value, tail] = tidal::fuzz::SplitOnce(rest, std::string_view("\0", 1));
    *out = value;
    rest = tail;
    return true;
  };
  std::string_view v;
  for (std::string_view key : kAnnotations)
    if (next(&v) && !v.empty()) pod.annotations[std::string(key)] = std::string(v);
  if (next(&v) && !v.empty()) c.env[std::string(tidal::kEnvNvlinkRequired)] = std::string(v);
  if (next(&v) && !v.empty()) c.env[std::string(tidal::kEnvLoadType)] = std::string(v);
  if (next(&v) && !v.empty()) c.limits[std::string(tidal::kGpuResource)] = std::string(v);
  if (next(&v)) c.image = std::string(v);
  pod.containers.push_back(c);

  tidal::fuzz::CheckDemand(pod);

  const tidal::PodDemand d = tidal::ToPodDemand(pod);
  if (!d.invalid_reason.empty()) return 0;
  const tidal::PolicyConfig& config = TenantConfig();
  const tidal::EffectiveThresholds e = tidal::ResolveThresholds(config, d);
  tidal::PodDemand without = d;
  without.gpu_reject_threshold.reset();
  const tidal::EffectiveThresholds base = tidal::ResolveThresholds(config, without);
  if (d.gpu_reject_threshold) {
    tidal::PodDemand at_max = d;
    at_max.gpu_reject_threshold = config.tenants[0].pod_threshold_max;
    const tidal::EffectiveThresholds ceiling = tidal::ResolveThresholds(config, at_max);
    TIDAL_FUZZ_CHECK(e.gpu_memory.reject <= ceiling.gpu_memory.reject,
                     "an annotation never raises the threshold above the namespace's maximum");
  } else {
    TIDAL_FUZZ_CHECK(e.gpu_memory.reject == base.gpu_memory.reject,
                     "without the annotation the namespace's threshold applies");
  }
  TIDAL_FUZZ_CHECK(
      e.nvlink.reject == base.nvlink.reject && e.await_ms.reject == base.await_ms.reject,
      "the annotation moves only the GPU memory threshold");
  tidal::CycleState state;
  const tidal::Status st = tidal::BuildCycleState(config, d, &state);
  if (st.ok()) TIDAL_FUZZ_CHECK(state.memory_need_per_gpu >= 0, "memory need is never negative");
  return 0;
}
