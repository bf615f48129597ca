#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "tidal/policy/config.h"
#include "tidal/policy/fragmentation.h"

namespace tidal {

// How nodes of equal FGD score are ordered: `none` leaves them equal (the paper's
// FGD: the scheduler's tie order decides); `pack` ranks them by how much of the
// node's GPU share is allocated once the pod is placed, fullest first.
enum class FgdTieBreak { kNone, kPack };

struct FgdArgs {
  std::vector<FgdTask> tasks;
  FgdTieBreak tie_break = FgdTieBreak::kNone;
  // The truncated score rounded down to a multiple of this: 1 is the paper's
  // FGD; more leaves more equal scores to the scheduler's tie order.
  int score_step = 1;

  static FgdArgs Parse(const YAML::Node& node, const std::string& path, ConfigErrors& errors);
  void Validate(const std::string& path, ConfigErrors& errors) const;
};

}  // namespace tidal
