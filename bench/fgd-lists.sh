#!/usr/bin/env bash
# The FGD paper's six policies on every openb pod list we can build, seeds 42-51:
# the four lists of the shared trace folder and the CPU-only variants of the
# default list (the paper's Fig. 14: CPU-only pods 5, 10, 20 and 25 % of the list,
# built by --cpu-only-pct). Prints each list's table (mean and sd over the seeds,
# the paper's figures where fgd_expected/ has them); docs/traces.md has the results.
#
#   bench/fgd-lists.sh TRACES [TIDAL]
#
# TRACES is a copy of the shared trace folder (it holds openb/); TIDAL defaults to
# build/release/src/cli/tidal.
set -euo pipefail
traces=${1:?usage: bench/fgd-lists.sh TRACES [TIDAL]}
tidal=${2:-build/release/src/cli/tidal}
openb=$traces/openb
policies=random,dot-prod,gpu-clustering,gpu-packing,best-fit-milli,fgd
run() {
  "$tidal" simulate --experiment fgd-inflation --nodes "$openb/openb_node_list_gpu_node.csv" \
    --seeds 42-51 --policies "$policies" "$@" 2>/dev/null
  echo
}
for list in default gpushare100 multigpu50 gpuspec33; do
  run --pods "$openb/openb_pod_list_$list.csv"
done
for pct in 5 10 20 25; do
  run --pods "$openb/openb_pod_list_default.csv" --cpu-only-pct "$pct"
done
