#include "policy/plugins/balance/balance_args.h"

#include <cmath>

#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

BalanceArgs BalanceArgs::Parse(const YAML::Node& node, const std::string& path,
                               ConfigErrors& errors) {
  BalanceArgs a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"mode", "weights"}, errors);
  std::string mode = "spread";
  ReadString(node, path, "mode", &mode, errors);
  if (mode == "spread") a.mode = BalanceMode::kSpread;
  else if (mode == "pack") a.mode = BalanceMode::kPack;
  else errors.Add(Join(path, "mode"), "\"" + mode + "\" (expected spread or pack)");
  const std::string wp = Join(path, "weights");
  if (IsMap(node["weights"], wp, errors)) {
    CheckKeys(node["weights"], wp, {"gpuMemory", "nvlink", "io"}, errors);
    ReadDouble(node["weights"], wp, "gpuMemory", &a.weight_gpu_memory, errors);
    ReadDouble(node["weights"], wp, "nvlink", &a.weight_nvlink, errors);
    ReadDouble(node["weights"], wp, "io", &a.weight_io, errors);
  }
  return a;
}

void BalanceArgs::Validate(const std::string& path, ConfigErrors& errors) const {
  const std::string wp = Join(path, "weights");
  for (auto [v, key] : {std::pair{weight_gpu_memory, "gpuMemory"}, std::pair{weight_nvlink, "nvlink"},
                        std::pair{weight_io, "io"}})
    if (!(v >= 0 && v <= 1)) errors.Add(Join(wp, key), Fmt(v) + " is outside [0, 1]");
  const double sum = weight_gpu_memory + weight_nvlink + weight_io;
  if (std::fabs(sum - 1) > 1e-6) errors.Add(wp, "weights sum to " + Fmt(sum) + ", expected 1");
}

}  // namespace tidal
