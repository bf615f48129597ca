#pragma once
// Splitting one request's work over a few threads. kube-scheduler asks the
// extender about one pod at a time, so a large request otherwise leaves every
// core but one idle while the scheduling cycle waits for it.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tidal {

class ForkJoin {
 public:
  // `helpers` threads join the caller of Run (0: Run is a plain loop). A helper
  // that finished a job polls for the next one for `spin_us` (yielding to any
  // other thread) before it sleeps. 0, the default: it sleeps at once. Polling
  // saves the wake-up (tens of microseconds) to back-to-back jobs, but under
  // load a polling helper takes CPU from threads with work: with 4 connections
  // on 2 cores it cost the extender a quarter of its requests per second.
  // After Prepare, sleeping helpers wake and wait for the next job awake, for up
  // to `prepare_us`.
  explicit ForkJoin(int helpers, int spin_us = 0, int prepare_us = 1000);
  ~ForkJoin();
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  int parallelism() const { return static_cast<int>(threads_.size()) + 1; }

  // Runs fn(part) once for every part in [0, parts), on the caller and the
  // helpers, and returns when all are done; an exception from a part is
  // rethrown here (the first one). While another Run holds the helpers, the
  // caller runs every part itself rather than wait (as for parts > 65 535).
  void Run(int parts, const std::function<void(int)>& fn);
  // A job is coming: wakes the sleeping helpers now, so that the wake-up (tens of
  // microseconds, more on a VM whose idle vCPU is halted) overlaps the caller's
  // work before Run instead of delaying the job.
  void Prepare();

 private:
  void Help();
  // Polls (yielding) until job generation `seen` is over or `poll_us` passed;
  // returns the generation then.
  std::uint32_t PollForJob(std::uint32_t seen, int poll_us);
  // Claims a part of job `generation`; -1 once none is left or the job is over.
  int Claim(std::uint32_t generation);
  void RunPart(int part);

  std::mutex run_mu_;  // one Run at a time has the helpers
  // generation << 32 | parts << 16 | next part to claim, in one word: a helper
  // late for a job cannot claim a part of the next one.
  std::atomic<std::uint64_t> ticket_{0};
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<int> done_{0};
  std::mutex error_mu_;
  std::exception_ptr error_;

  std::mutex sleep_mu_;
  std::condition_variable wake_;
  bool stop_ = false;           // under sleep_mu_
  std::uint64_t prepared_ = 0;  // Prepare calls; under sleep_mu_
  std::atomic<bool> stopping_{false};
  int spin_us_, prepare_us_;
  std::vector<std::thread> threads_;
};

}  // namespace tidal
