#pragma once
// The simulator's side-by-side report: a table, JSON, CSV series for plots.
#include <string>
#include <vector>

#include "tidal/sim/simulator.h"

namespace tidal::sim {

struct RunReport {
  std::string scenario;
  std::string cluster;
  std::uint64_t seed = 0;
  std::vector<PolicyResult> policies;
};

double Percentile(std::vector<double> values, double p);  // nearest rank, p in [0, 100]

std::string RenderTable(const RunReport& report);
// Deterministic text: fixed decimals, keys in a fixed order (golden-file tested).
std::string RenderJson(const RunReport& report);
// Writes memory.csv, lscs.csv, waits.csv, summary.json into `dir` (created).
void WriteCsv(const RunReport& report, const std::string& dir);

}  // namespace tidal::sim
