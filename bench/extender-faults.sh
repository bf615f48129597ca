#!/usr/bin/env bash
# Latency of `tidal serve` /filter + /prioritize (1 000 nodes, NodeNames) while
# its metrics source misbehaves, one fault after another, with wrk on loopback.
#
#   [FAULTS="none slow"] bench/extender-faults.sh BUILD_DIR [SECONDS] [CONNECTIONS] [NODES] [SLOW_MS]
#
# The source is bench/fake_prometheus.py serving the series of NODES agents
# (bench/gen_payloads.py); the extender runs with metricCacheTTL 5s and the default
# queryTimeout 5s, so a fault is seen within ~10 s. Per fault: set it, wait until
# the extender's /metrics shows it, load for SECONDS with wrk (kube-scheduler's
# order: filter, then prioritize of the same pod), read /metrics, end the fault,
# wait for recovery. Prints p50/p99/req/s/errors per fault side by side; the
# budget is p99 ≤ 50 ms. Requests never wait on a fetch, so a fault
# should cost nothing here.
set -euo pipefail
build=${1:?usage: bench/extender-faults.sh BUILD_DIR [SECONDS] [CONNECTIONS] [NODES] [SLOW_MS]}
seconds=${2:-15}
conns=${3:-4}
nodes=${4:-1000}
slow_ms=${5:-4900}
here=$(cd "$(dirname "$0")" && pwd)
tidal="$build/src/cli/tidal"
[ -x "$tidal" ] || { echo "no $tidal: build first" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }

work=$(mktemp -d)
pids=()
fake_pid=""
cleanup() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

python3 "$here/gen_payloads.py" "$work" "$nodes"
echo none >"$work/fault"
prom_port=$(port)
start_fake() {
  python3 "$here/fake_prometheus.py" "$prom_port" "$work/metrics" "$work/fault" 2>>"$work/fake.log" &
  fake_pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$prom_port/api/v1/query?query=up" && return; sleep 0.1; done
}
stop_fake() { kill "$fake_pid"; wait "$fake_pid" 2>/dev/null || true; fake_pid=""; }
start_fake

serve_port=$(port)
printf 'metricCacheTTL: 5s\nqueryTimeout: 5s\n' >"$work/tidal.yaml"
"$tidal" serve --listen "127.0.0.1:$serve_port" --config "$work/tidal.yaml" \
  --prometheus "http://127.0.0.1:$prom_port" --threads "$conns" >"$work/serve.log" 2>&1 &
pids+=($!)
serve_pid=$!

metrics() { curl -s "http://127.0.0.1:$serve_port/metrics"; }
gauge() { metrics | awk -v n="$1" '$1 == n { print $2 }'; }
# until CONDITION (an awk expression over the gauges named g["..."]) holds, up to 60 s
wait_for() {
  for _ in $(seq 120); do
    metrics | awk -v cond="$1" '
      $1 ~ /^tidal_extender_[a-z_]+$/ { g[$1] = $2 }
      END {
        st = g["tidal_extender_fallback_stage"]; nodes = g["tidal_extender_snapshot_nodes"]
        bad = g["tidal_extender_snapshot_unusable_nodes"]; extra = g["tidal_extender_series_nodes_not_requested"]
        fetch = g["tidal_extender_metrics_fetch_duration_seconds"]
        ok = 0
        if (cond == "healthy") ok = st == 0 && bad == 0 && fetch < 2.5
        if (cond == "failing") ok = st >= 1
        if (cond == "slow") ok = st == 0 && fetch >= 2.5
        if (cond == "unusable") ok = bad > 0
        if (cond == "unknown") ok = extra > 0 || nodes > want
        exit !ok
      }' want="$nodes" && return 0
    sleep 0.5
  done
  echo "extender-faults: timed out waiting for '$1'" >&2; metrics | grep -v '^#' | grep -v _bucket >&2; tail -20 "$work/serve.log" >&2
  return 1
}
wait_for healthy

cat > "$work/verbs.lua" <<LUA
local f = io.open("$work/prioritize.json", "rb")
local body = f:read("*a")
f:close()
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", (n % 2 == 1) and "/filter" or "/prioritize",
                    {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %.0f %d %d\n", latency:percentile(50), latency:percentile(99),
    summary.requests / (summary.duration / 1e6),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
LUA

# fault name | fault file | what /metrics shows while it lasts
faults=(
  "none|none|healthy"
  "down|DOWN|failing"
  "hanging|hang|failing"
  "slow ${slow_ms} ms/query|slow $slow_ms|slow"
  "HTTP 500|500|failing"
  "truncated JSON|truncated|failing"
  "NaN value|nan|unusable"
  "+Inf value|inf|unusable"
  "200 unknown nodes|unknown 200|unknown"
  "10 duplicated series|duplicated 10|unusable"
)
# FAULTS="down hanging" (first words of the names) runs only those.
if [ -n "${FAULTS:-}" ]; then
  chosen=()
  for entry in "${faults[@]}"; do
    for w in $FAULTS; do [ "${entry%% *}" = "$w" ] || [ "${entry%%|*}" = "$w" ] && chosen+=("$entry"); done
  done
  faults=("${chosen[@]}")
fi
echo "tidal serve, $nodes nodes, /filter + /prioritize alternating, $seconds s per fault, $conns connections, wrk -t2, $(nproc) cores"
printf '%-22s %9s %9s %8s %7s %8s %6s %9s %s\n' fault p50_ms p99_ms req/s errors non200 stage failures "fetch_s"
for entry in "${faults[@]}"; do
  IFS='|' read -r name file cond <<<"$entry"
  if [ "$file" = DOWN ]; then stop_fake; else echo "$file" >"$work/fault"; fi
  wait_for "$cond"
  line=$(wrk -t2 -c"$conns" -d"${seconds}s" --timeout 10s -s "$work/verbs.lua" "http://127.0.0.1:$serve_port" | grep '^RESULT')
  read -r _ p50 p99 rps errs non200 <<<"$line"
  stage=$(gauge tidal_extender_fallback_stage); failures=$(gauge tidal_extender_metrics_source_failures)
  fetch=$(gauge tidal_extender_metrics_fetch_duration_seconds)
  awk -v n="$name" -v a="$p50" -v b="$p99" -v r="$rps" -v e="$errs" -v s="$non200" -v st="$stage" -v f="$failures" -v ft="$fetch" \
    'BEGIN { printf "%-22s %9.2f %9.2f %8d %7d %8d %6s %9s %s\n", n, a / 1000, b / 1000, r, e, s, st, f, ft }'
  echo none >"$work/fault"
  [ -n "$fake_pid" ] || start_fake
  wait_for healthy
done
bad=$(metrics | awk '/^tidal_extender_requests_total\{.*code="bad_request"/ { s += $2 } END { print s + 0 }')
echo "bad_request answers: $bad"
echo "log (warnings and recoveries):"
grep -E 'failed|slow|fast again|unusable|usable again|nodes with series|ok, |fallback' "$work/serve.log" | sed 's/^/  /' | head -60
