#pragma once
// The agent's metric model and the Prometheus text exposition format 0.0.4.
// No HTTP here: the same text feeds /metrics and `tidal agent --once`.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidal/core/exposition.h"

namespace tidal::agent {

enum class MetricType { kGauge, kCounter };
std::string_view MetricTypeName(MetricType type);

using LabelPairs = std::vector<std::pair<std::string, std::string>>;  // in output order

struct Sample {
  LabelPairs labels;
  double value = 0;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;
};

// The samples of one collection pass. Every sample gets the `node` label first.
// Families are kept by name, so two collectors adding to the same family still
// produce one uninterrupted group in the exposition.
class MetricSet {
 public:
  explicit MetricSet(std::string node) : node_(std::move(node)) {}

  // Declares a family (idempotent; the first help and type win) so that it is
  // exposed with HELP and TYPE even when it has no sample in this pass.
  void Declare(std::string_view name, std::string_view help, MetricType type = MetricType::kGauge);
  // Adds a sample to a declared family; an undeclared one is declared with empty help.
  void Add(std::string_view name, LabelPairs labels, double value);

  const std::vector<MetricFamily>& families() const { return families_; }
  const std::string& node() const { return node_; }

 private:
  MetricFamily& Find(std::string_view name);

  std::string node_;
  std::vector<MetricFamily> families_;  // in declaration order
};

// Text format 0.0.4: HELP and TYPE for every family, then its samples; families
// without samples are left out entirely (a TYPE line alone is legal but noisy).
// A label value that is not UTF-8 (a disk or GPU name of arbitrary bytes) is
// written repaired (EscapeLabelValue); each such label is appended to
// `repaired` as `label="bytes"` (once per sample), bytes outside ASCII as \xNN.
std::string SerializeText(const std::vector<MetricFamily>& families,
                          std::vector<std::string>* repaired = nullptr);

}  // namespace tidal::agent
