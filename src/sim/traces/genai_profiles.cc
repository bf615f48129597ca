#include "tidal/sim/traces/genai_profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tidal::sim::traces {

std::vector<MemoryProfile> DeriveMemoryProfiles(const std::vector<PodUsage>& pods,
                                                const GenaiProfileOptions& o) {
  std::vector<MemoryProfile> out;
  if (!(o.step_s > 0) || o.points <= 0) return out;
  for (const PodUsage& pod : pods) {
    const auto& s = pod.memory;  // sorted by time (LoadGenaiUsage)
    if (s.empty()) continue;
    std::vector<double> values;
    std::size_t j = 0;
    for (int k = 0; k < o.points; ++k) {
      const double t = s.front().t_s + o.step_s * k;
      if (t > s.back().t_s) break;
      while (j + 1 < s.size() && s[j + 1].t_s <= t) ++j;
      double v = s[j].value;
      if (j + 1 < s.size() && s[j + 1].t_s > s[j].t_s)
        v += (s[j + 1].value - s[j].value) * (t - s[j].t_s) / (s[j + 1].t_s - s[j].t_s);
      values.push_back(v);
    }
    const double peak = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
    if (static_cast<int>(values.size()) < o.min_points || !(peak > 0)) continue;
    MemoryProfile m;
    m.name = pod.pod.substr(0, 12);
    m.step_s = o.step_s;
    // Three decimals are 0.1 % of the peak: finer than the simulator needs.
    for (double v : values)
      m.share.push_back(std::round(1000.0 * std::max(0.0, v) / peak) / 1000.0);
    out.push_back(std::move(m));
  }
  return out;
}

std::string RenderMemoryProfilesYaml(const std::vector<MemoryProfile>& profiles,
                                     const std::string& source, const std::string& command) {
  std::string out =
      "# GPU memory of real pods as a share of each pod's own peak, one value per step from\n"
      "# its first sample (docs/traces.md). Generated; do not edit by hand.\n";
  out += fmt::format("source: \"{}\"\ncommand: \"{}\"\n", source, command);
  out += fmt::format("stepSeconds: {}\nprofiles:\n",
                     profiles.empty() ? 60.0 : profiles.front().step_s);
  for (const auto& p : profiles) {
    out += fmt::format("  - name: \"{}\"\n    share: [", p.name);
    for (std::size_t i = 0; i < p.share.size(); ++i)
      out +=
          fmt::format("{}{}{:.3f}", i ? "," : "", i && i % 20 == 0 ? "\n      " : " ", p.share[i]);
    out += "]\n";
  }
  return out;
}

}  // namespace tidal::sim::traces
