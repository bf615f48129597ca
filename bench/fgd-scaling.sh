#!/usr/bin/env bash
# How the FGD experiment's time grows with the cluster: one openb seed on the GPU
# node list and the default pod list, and on K copies of both (node and pod names
# suffixed -c00, -c01, …), per policy. Prints per policy the best run time of each
# (the CLI's "node scorings in T s", which leaves out loading the CSVs), the time
# ratio, the node-scorings ratio, and the ratios of the nodes re-scored (the
# verdicts brought up to date, of which the scorings are one per class) and of the
# changes walked to find them (the log of changed nodes read); 1x and
# Kx runs alternate so that a change in the machine's load hits both.
# docs/traces.md ("Speed") has the results.
#
#   bench/fgd-scaling.sh [POLICIES] [COPIES] [RUNS] [TIDAL]
#
# POLICIES defaults to the paper's five deterministic ones, fgd and Tidal's,
# COPIES to 16, RUNS to 3; TIDAL to build/release/src/cli/tidal.
set -euo pipefail
cd "$(dirname "$0")/.."
policies=${1:-dot-prod,gpu-clustering,gpu-packing,best-fit-milli,fgd,fgd-lookahead,load-aware-spread,load-aware-pack}
copies=${2:-16}
runs=${3:-3}
tidal=${4:-build/release/src/cli/tidal}
openb=testdata/traces/openb
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# K copies of a CSV whose first column is a name: the header once, then every row
# K times with the name suffixed.
replicate() {
  awk -F, -v OFS=, -v k="$copies" 'NR == 1 { print; next }
    { rows[++n] = $0 }
    END { for (c = 0; c < k; ++c) for (i = 1; i <= n; ++i) {
            $0 = rows[i]; $1 = $1 sprintf("-c%02d", c); print } }' "$1"
}
replicate "$openb/openb_node_list_gpu_node.csv" >"$work/nodes.csv"
replicate "$openb/openb_pod_list_default.csv" >"$work/pods.csv"

# One run: prints "seconds scorings re-scored walked".
one() {
  "$tidal" simulate --experiment fgd-inflation --nodes "$1" --pods "$2" --seeds 42 \
    --policies "$3" 2>/dev/null |
    awk '/node scorings in/ { for (i = 1; i <= NF; ++i) {
           if ($i == "node") s = $(i - 1); if ($i == "in") t = $(i + 1)
           if ($i == "nodes" && $(i + 1) == "re-scored,") r = $(i - 1)
           if ($i == "changes" && $(i + 1) == "walked)") w = $(i - 1) }
         sub("s$", "", t); print t, s, r, w }'
}

printf '| policy | 1x (s) | %dx (s) | time ratio | scorings 1x | scorings %dx | ratio | re-scored ratio | walked ratio |\n' "$copies" "$copies"
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for policy in ${policies//,/ }; do
  best1='' bestk=''
  for ((r = 0; r < runs; ++r)); do
    read -r t1 s1 r1 w1 < <(one "$openb/openb_node_list_gpu_node.csv" "$openb/openb_pod_list_default.csv" "$policy")
    read -r tk sk rk wk < <(one "$work/nodes.csv" "$work/pods.csv" "$policy")
    if [[ -z $best1 ]] || awk -v a="$t1" -v b="$best1" 'BEGIN { exit !(a < b) }'; then best1=$t1; fi
    if [[ -z $bestk ]] || awk -v a="$tk" -v b="$bestk" 'BEGIN { exit !(a < b) }'; then bestk=$tk; fi
  done
  awk -v p="$policy" -v a="$best1" -v b="$bestk" -v s="$s1" -v t="$sk" -v r="$r1" -v q="$rk" -v w="$w1" -v x="$wk" 'BEGIN {
    printf "| %s | %.3f | %.2f | %.1f | %s | %s | %.1f | %.1f | %.1f |\n", p, a, b, b / a, s, t, t / s,
      q / r, (w > 0 ? x / w : 0) }'
done
