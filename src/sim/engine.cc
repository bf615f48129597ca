#include "tidal/sim/engine.h"

#include <cmath>

namespace tidal::sim {

void Engine::At(TimeMs at, Action action) {
  if (at < now_) at = now_;
  std::size_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    actions_[slot] = std::move(action);
  } else {
    slot = actions_.size();
    actions_.push_back(std::move(action));
  }
  queue_.push({at, seq_++, slot});
}

void Engine::Run(TimeMs until) {
  stopped_ = false;
  while (!queue_.empty() && !stopped_) {
    const Event e = queue_.top();
    if (e.at > until) break;
    queue_.pop();
    now_ = e.at;
    Action action = std::move(actions_[e.slot]);
    free_slots_.push_back(e.slot);
    ++events_run_;
    action();
  }
}

std::uint64_t Random::Next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Random::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Random::Exponential(double mean) { return -mean * std::log1p(-Uniform()); }

std::uint64_t Random::Below(std::uint64_t n) { return n == 0 ? 0 : Next() % n; }

}  // namespace tidal::sim
