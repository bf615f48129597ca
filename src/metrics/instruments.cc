#include "tidal/metrics/instruments.h"

#include <algorithm>

#include "tidal/core/exposition.h"

namespace tidal {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  counts_[static_cast<std::size_t>(it - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
  sum_.Add(v);
}

std::vector<std::uint64_t> Histogram::Counts() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    out[i] = running;
  }
  return out;
}

namespace {

void Header(const std::string& name, const std::string& help, const char* type, std::string* out) {
  *out += "# HELP " + name + " " + EscapeHelp(help) + "\n# TYPE " + name + " " + type + "\n";
}

void AppendLabels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                  const char* extra_name, const std::string* extra_value, std::string* out) {
  if (names.empty() && !extra_name) return;
  out->push_back('{');
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out->push_back(',');
    *out += names[i] + "=\"" + EscapeLabelValue(i < values.size() ? values[i] : "") + "\"";
  }
  if (extra_name) {
    if (!names.empty()) out->push_back(',');
    *out += std::string(extra_name) + "=\"" + *extra_value + "\"";
  }
  out->push_back('}');
}

void AppendScalarFamily(const Family<AtomicDouble>& f, const char* type, std::string* out) {
  Header(f.name(), f.help(), type, out);
  f.ForEach([&](const std::vector<std::string>& values, const AtomicDouble& v) {
    *out += f.name();
    AppendLabels(f.label_names(), values, nullptr, nullptr, out);
    out->push_back(' ');
    AppendValue(v.Get(), out);
    out->push_back('\n');
  });
}

}  // namespace

void AppendCounterFamily(const Family<AtomicDouble>& f, std::string* out) {
  AppendScalarFamily(f, "counter", out);
}

void AppendGaugeFamily(const Family<AtomicDouble>& f, std::string* out) {
  AppendScalarFamily(f, "gauge", out);
}

void AppendHistogramFamily(const Family<Histogram>& f, std::string* out) {
  Header(f.name(), f.help(), "histogram", out);
  f.ForEach([&](const std::vector<std::string>& values, const Histogram& h) {
    const auto counts = h.Counts();
    for (std::size_t i = 0; i < counts.size(); ++i) {
      std::string le;
      if (i < h.bounds().size()) {
        AppendValue(h.bounds()[i], &le);
      } else {
        le = "+Inf";
      }
      *out += f.name() + "_bucket";
      AppendLabels(f.label_names(), values, "le", &le, out);
      *out += " " + std::to_string(counts[i]) + "\n";
    }
    *out += f.name() + "_sum";
    AppendLabels(f.label_names(), values, nullptr, nullptr, out);
    out->push_back(' ');
    AppendValue(h.Sum(), out);
    *out += "\n" + f.name() + "_count";
    AppendLabels(f.label_names(), values, nullptr, nullptr, out);
    *out += " " + std::to_string(counts.back()) + "\n";
  });
}

void AppendGauge(const std::string& name, const std::string& help, double value, std::string* out) {
  Header(name, help, "gauge", out);
  *out += name + " ";
  AppendValue(value, out);
  out->push_back('\n');
}

}  // namespace tidal
