#pragma once
// What both snapshot builders (the agent's, snapshot.cc; the other sources',
// sources.cc) read from a series' labels and how they judge a reading, so that
// a doubtful value is refused the same way whichever exporter gave it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/types.h"

namespace tidal::readings {

// The agent's families (docs/metrics.md). The await is the agent's own series in
// seconds, not the ai_storage_await_ms recording rule: the extender must not
// depend on which rules a Prometheus loads.
inline constexpr const char* kAgentUsed = "ai_gpu_memory_used_bytes";
inline constexpr const char* kAgentTotal = "ai_gpu_memory_total_bytes";
inline constexpr const char* kAgentNvlink = "ai_nvlink_bandwidth_utilization";
inline constexpr const char* kAgentPeers = "ai_gpu_nvlink_peer_links";
inline constexpr const char* kAgentCompetition = "ai_nvlink_competition_index";
inline constexpr const char* kAgentAwait = "ai_storage_await_seconds";
inline constexpr const char* kAgentUp = "ai_collector_up";
// The label Tidal's own queries add to tell the series of one source apart in one
// result (sources.cc); DescribeSeries leaves it out.
inline constexpr const char* kSeriesMark = "tidal_series";

// The label's value (a view into `labels`); empty when absent.
std::string_view Label(const Labels& labels, const char* key);
// A GPU index label (gpu_id, gpu, peer_gpu_id): 0 .. kMaxGpusPerNode-1, else nothing.
std::optional<int> GpuIndex(const Labels& labels, const char* key);
// name{label="value",…} for a problem text, without the labels every series has
// (__name__, instance, job) and Tidal's query marks; values quoted.
std::string DescribeSeries(std::string_view name, const Labels& labels);
// Keeps `value` in *slot; a second value that differs is a problem (two series
// for one GPU or node disagree), and the larger, the worse reading, is kept.
void Merge(std::optional<double>* slot, double value, const std::string& what,
           std::vector<std::string>* problems);
// A GPU's memory in bytes is usable when used ≤ total and total is at least 1 MiB
// (0 would read as an idle GPU) and fits in Bytes (beyond, as a huge free one).
// Else a problem naming the GPU and the values in MiB.
std::optional<std::string> GpuMemoryProblem(int index, double used, double total);
// An NVLink peer series' value as a link count: NVLink has at most a few dozen per
// pair, so anything beyond 65536 is no count (and beyond an int, undefined to
// convert). Else nothing, and a problem naming the series.
std::optional<int> LinkCount(double value, const std::string& what,
                             std::vector<std::string>* problems);

}  // namespace tidal::readings
