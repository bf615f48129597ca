#pragma once
// A service's own instruments (counters, gauges, histograms) for its /metrics,
// lock-free to update on the request path; serialized in text format 0.0.4.
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tidal {

// A double added to atomically (counters of seconds, gauges).
class AtomicDouble {
 public:
  void Add(double v) {
    double cur = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
    }
  }
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double Get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // ascending upper bounds, +Inf implied
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  std::vector<std::uint64_t> Counts() const;  // cumulative, one per bound plus +Inf
  double Sum() const { return sum_.Get(); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, not cumulative
  AtomicDouble sum_;
};

// A family of series sharing a name, keyed by label values. Children are
// created on first use (under a lock) and never removed, so the pointers that
// callers keep stay valid; keep label values low-cardinality.
template <class T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
  template <class... Args>
  T& With(const std::vector<std::string>& values, Args&&... args) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : children_)
      if (c.values == values) return c.metric;
    children_.emplace_back(values, std::forward<Args>(args)...);
    return children_.back().metric;
  }
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  template <class F>
  void ForEach(F&& f) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& c : children_) f(c.values, c.metric);
  }

 private:
  struct Child {
    template <class... Args>
    explicit Child(std::vector<std::string> v, Args&&... args)
        : values(std::move(v)), metric(std::forward<Args>(args)...) {}
    std::vector<std::string> values;
    T metric;
  };
  std::string name_, help_;
  std::vector<std::string> label_names_;
  mutable std::mutex mu_;
  std::deque<Child> children_;  // deque: references stay valid as it grows
};

// Appends families in text format: counters and gauges are AtomicDouble.
void AppendCounterFamily(const Family<AtomicDouble>& f, std::string* out);
void AppendGaugeFamily(const Family<AtomicDouble>& f, std::string* out);
void AppendHistogramFamily(const Family<Histogram>& f, std::string* out);
void AppendGauge(const std::string& name, const std::string& help, double value, std::string* out);

}  // namespace tidal
