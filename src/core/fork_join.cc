#include "tidal/core/fork_join.h"

#include <chrono>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tidal {

namespace {
inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}
}  // namespace

ForkJoin::ForkJoin(int helpers, int spin_us, int prepare_us)
    : spin_us_(spin_us), prepare_us_(prepare_us) {
  for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { Help(); });
}

ForkJoin::~ForkJoin() {
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    stop_ = true;
  }
  stopping_.store(true);
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

int ForkJoin::Claim(std::uint32_t generation) {
  std::uint64_t t = ticket_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<std::uint32_t>(t >> 32) != generation) return -1;
    const auto parts = static_cast<std::uint32_t>(t >> 16) & 0xffff;
    const auto part = static_cast<std::uint32_t>(t) & 0xffff;
    if (part >= parts) return -1;
    if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) {
      return static_cast<int>(part);
    }
  }
}

void ForkJoin::RunPart(int part) {
  try {
    (*job_)(part);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) error_ = std::current_exception();
  }
  done_.fetch_add(1, std::memory_order_acq_rel);
}

void ForkJoin::Run(int parts, const std::function<void(int)>& fn) {
  std::unique_lock<std::mutex> own(run_mu_, std::try_to_lock);
  if (!own.owns_lock() || threads_.empty() || parts <= 1 || parts > 0xffff) {
    for (int p = 0; p < parts; ++p) fn(p);
    return;
  }
  job_ = &fn;
  done_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  const auto generation =
      static_cast<std::uint32_t>(ticket_.load(std::memory_order_relaxed) >> 32) + 1;
  ticket_.store(std::uint64_t{generation} << 32 | static_cast<std::uint64_t>(parts) << 16,
                std::memory_order_release);
  {
    // Sleeping helpers check the ticket under this lock before they wait.
    std::lock_guard<std::mutex> lock(sleep_mu_);
  }
  wake_.notify_all();
  for (int part; (part = Claim(generation)) >= 0;) RunPart(part);
  while (done_.load(std::memory_order_acquire) < parts) Pause();
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ForkJoin::Prepare() {
  if (threads_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    ++prepared_;
  }
  wake_.notify_all();
}

std::uint32_t ForkJoin::PollForJob(std::uint32_t seen, int poll_us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(poll_us);
  auto generation = static_cast<std::uint32_t>(ticket_.load(std::memory_order_acquire) >> 32);
  for (int polls = 0; generation == seen && !stopping_.load(std::memory_order_relaxed); ++polls) {
    // Yield rather than spin: a thread with work (another request's) runs first.
    std::this_thread::yield();
    if ((polls & 7) == 7 && std::chrono::steady_clock::now() > until) break;
    generation = static_cast<std::uint32_t>(ticket_.load(std::memory_order_acquire) >> 32);
  }
  return generation;
}

void ForkJoin::Help() {
  std::uint32_t seen = 0;
  std::uint64_t seen_prepared = 0;
  for (;;) {
    std::uint32_t generation = spin_us_ > 0 ? PollForJob(seen, spin_us_)
                                            : static_cast<std::uint32_t>(ticket_.load() >> 32);
    if (generation == seen) {
      {
        // Sleep until a job, a Prepare or the end.
        std::unique_lock<std::mutex> lock(sleep_mu_);
        wake_.wait(lock, [&] {
          return stop_ || prepared_ != seen_prepared ||
                 static_cast<std::uint32_t>(ticket_.load() >> 32) != seen;
        });
        if (stop_) return;
        seen_prepared = prepared_;
      }
      generation = static_cast<std::uint32_t>(ticket_.load() >> 32);
      // Woken ahead of a job: wait for it awake, for a while.
      if (generation == seen) generation = PollForJob(seen, prepare_us_);
      if (generation == seen) continue;  // none came
    }
    if (stopping_.load()) return;
    seen = generation;
    for (int part; (part = Claim(generation)) >= 0;) RunPart(part);
  }
}

}  // namespace tidal
