#include "policy/plugins/milligpu/milligpu_args.h"

#include "tidal/policy/seed_arg.h"
#include "tidal/policy/yaml_util.h"

namespace tidal {

using namespace yamlutil;

MilliGpuArgs MilliGpuArgs::Parse(const YAML::Node& node, const std::string& path,
                                 ConfigErrors& errors) {
  MilliGpuArgs a;
  if (!node || node.IsNull()) return a;
  if (!IsMap(node, path, errors)) return a;
  CheckKeys(node, path, {"gpuPick", "seed"}, errors);
  ReadSeed(node, path, "seed", &a.seed, errors);
  std::string pick = "best-fit";
  ReadString(node, path, "gpuPick", &pick, errors);
  if (pick == "best-fit")
    a.pick = GpuPick::kBestFit;
  else if (pick == "worst-fit")
    a.pick = GpuPick::kWorstFit;
  else if (pick == "random")
    a.pick = GpuPick::kRandom;
  else
    errors.Add(Join(path, "gpuPick"), "\"" + pick + "\" (expected best-fit, worst-fit or random)");
  return a;
}

void MilliGpuArgs::Validate(const std::string&, ConfigErrors&) const {}

}  // namespace tidal
