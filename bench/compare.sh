#!/usr/bin/env bash
# Compares two or more policy_bench binaries side by side on a noisy machine: runs
# them in turn, ROUNDS times (default 8), 3 short repetitions each, and prints each
# benchmark's minimum per binary. Interleaving spreads other tenants' load evenly
# over the binaries; the minimum is the run least disturbed by it.
#   bench/compare.sh [-f FILTER] [-r ROUNDS] BIN_A BIN_B [BIN ...]
set -euo pipefail
filter='nodes:5000$'
rounds=8
usage() {
  echo "usage: $0 [-f FILTER] [-r ROUNDS] BIN_A BIN_B [BIN ...]" >&2
  exit 2
}
while getopts "f:r:" opt; do
  case "$opt" in
    f) filter=$OPTARG ;;
    r) rounds=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
for bin in "$@"; do
  [ -x "$bin" ] || { echo "$bin: not an executable" >&2; exit 2; }
done
for _ in $(seq 1 "$rounds"); do
  for bin in "$@"; do
    "$bin" --benchmark_filter="$filter" --benchmark_repetitions=3 \
      --benchmark_min_time=0.05 --benchmark_format=csv 2>/dev/null |
      awk -F, -v bin="$bin" '/^"BM_/ && $1 !~ /_(mean|median|stddev|cv|min)"$/ {
        gsub(/"/, "", $1); print bin, $1, $4, $5 }'
  done
done | awk '{ k = $2 " " $1; if (!(k in m) || $3 < m[k]) { m[k] = $3; u[k] = $4 } }
            END { for (k in m) print k, m[k], u[k] }' | sort | column -t
