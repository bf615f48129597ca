#pragma once
// What both snapshot builders (the agent's, snapshot.cc; the other sources',
// sources.cc) read from a series' labels and how they judge a reading, so that
// a doubtful value is refused the same way whichever exporter gave it.
#include <optional>
#include <string>
#include <vector>

#include "tidal/core/types.h"

namespace tidal::readings {

// The label's value; empty when absent.
std::string Label(const Labels& labels, const char* key);
// A GPU index label (gpu_id, gpu, peer_gpu_id): 0 .. kMaxGpusPerNode-1, else nothing.
std::optional<int> GpuIndex(const Labels& labels, const char* key);
// name{label="value",…} for a problem text, without the labels every series has
// (__name__, instance, job) and Tidal's query marks; values quoted.
std::string DescribeSeries(const std::string& name, const Labels& labels);
// Keeps `value` in *slot; a second value that differs is a problem (two series
// for one GPU disagree), and the larger, the worse reading, is kept.
void Merge(std::optional<double>* slot, double value, const std::string& what,
           std::vector<std::string>* problems);
// A GPU's memory in bytes is usable when used ≤ total and total is at least 1 MiB
// (0 would read as an idle GPU) and fits in Bytes (beyond, as a huge free one).
// Else a problem naming the GPU and the values in MiB.
std::optional<std::string> GpuMemoryProblem(int index, double used, double total);

}  // namespace tidal::readings
