#pragma once
// What a policy reads of the WorkloadLearner: the GPU workload learned from the
// pods seen (an enabled fgd plugin with `tasks: learned`), and whether GPU choices
// are carried out (one with `onlyWithTidalDevicePlugin`). Only where something is
// read do the extender and the seed simulator hand the learner to the scheduling
// cycles (a lock per cycle), and only where the workload is read do they learn it
// (a lock per pod). Implemented with the fgd plugin's args
// (src/policy/plugins/fgd/fgd_args.cc).
#include "tidal/policy/config.h"

namespace tidal {

struct WorkloadLearnerUse {
  bool workload = false;     // tasks: learned
  bool gpu_choices = false;  // onlyWithTidalDevicePlugin
  bool any() const { return workload || gpu_choices; }
};

WorkloadLearnerUse UseOfWorkloadLearner(const PolicyConfig& config);

}  // namespace tidal
