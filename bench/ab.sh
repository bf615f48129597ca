#!/usr/bin/env bash
# Interleaved comparison of two Google Benchmark binaries (say, extender_bench built
# from two commits): the machine's speed drifts by up to 2x within an hour, so the
# binaries alternate, run after run, and only their figures side by side compare.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY BENCHMARK_FILTER [ROUNDS]
#
# Each run is --benchmark_repetitions=3 --benchmark_min_time=0.2; prints, per binary
# and benchmark, the median of the runs' medians and the best run's median (µs).
set -euo pipefail
old=${1:?usage: bench/ab.sh OLD NEW FILTER [ROUNDS]}
new=${2:?usage: bench/ab.sh OLD NEW FILTER [ROUNDS]}
filter=${3:?usage: bench/ab.sh OLD NEW FILTER [ROUNDS]}
rounds=${4:-5}
for _ in $(seq "$rounds"); do
  for which in old new; do
    "${!which}" --benchmark_filter="$filter" --benchmark_repetitions=3 --benchmark_min_time=0.2 \
      --benchmark_format=csv 2>/dev/null | grep -E '_median"' | awk -F, -v w="$which" '{print w, $1, $3}'
  done
done | python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    which, name, t = line.split()
    runs[(name.strip("\"").removesuffix("_median"), which)].append(float(t))
for (name, which), ts in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1] != "old")):
    print(f"{name:60s} {which}: median {statistics.median(ts):.0f} (best {min(ts):.0f}) over {len(ts)} runs")
'
