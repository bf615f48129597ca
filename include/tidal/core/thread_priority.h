#pragma once
// Background work (the metrics refresher's fetch and snapshot build) shares the
// scheduler host's cores with the threads answering kube-scheduler. Giving it a
// higher nice value lets a request's thread preempt it at once instead of
// waiting out its time slice; it still gets the CPU that requests leave idle.
#include <string>

namespace tidal {

// Adds `increment` (1-19) to the calling thread's nice value. Only this thread
// changes (Linux keeps a nice value per thread). Lowering priority needs no
// privilege; on failure returns a message naming why, and nothing changes.
std::string LowerThisThreadsPriority(int increment);

// The calling thread's nice value (-20..19).
int ThisThreadsNice();

}  // namespace tidal
