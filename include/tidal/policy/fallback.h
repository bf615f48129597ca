#pragma once
// The runners used while the metrics source is failing (docs/design.md#fallback).
#include "tidal/policy/runner.h"

namespace tidal {

// Stage 1 or 2: every enabled filter of `config` (they still judge the nodes
// whose own reading is fresh; the others are unknown and pass them), then the
// fallback plugin's filter (stage 2: golden pool only) and its score (remaining
// allocatable GPUs, most first) in place of the configured scores.
// Throws InputError on bad plugin args, like Runner(config).
Runner MakeFallbackRunner(const PolicyConfig& config, int stage);

}  // namespace tidal
