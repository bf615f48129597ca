#pragma once
// Whether a policy reads the GPU workload learned from the pods seen (an enabled
// fgd plugin with `tasks: learned`): only then do the extender and the seed
// simulator learn it and hand it to the scheduling cycles. Implemented with the
// fgd plugin's args (src/policy/plugins/fgd/fgd_args.cc).
#include "tidal/policy/config.h"

namespace tidal {

bool ReadsLearnedWorkload(const PolicyConfig& config);

}  // namespace tidal
