#!/usr/bin/env bash
# Soak of `tidal serve`: wrk load on /filter and /prioritize (1 000-node NodeNames
# payloads, alternating as kube-scheduler sends them) for SECONDS while a real
# Prometheus on loopback is restarted every RESTART_EVERY seconds.
#
#   [WARMUP=30] bench/soak.sh BUILD_DIR [SECONDS] [CONNECTIONS] [NODES] [RESTART_EVERY]
#
# Prometheus (temporary data dir, 5 s scrapes) scrapes one static exposition of
# NODES agents' series (bench/gen_payloads.py, as bench/extender-wrk.sh); the
# extender fetches every 5 s. Passes when: wrk saw no failed request (connect,
# read, write, timeout, non-200) and the extender answered none as bad_request;
# RSS at the end is within 10 % of RSS after a WARMUP-second (30) warm-up; threads and file
# descriptors did not grow (/proc/PID/status, /proc/PID/fd; both read with no
# client connected, after the extender is back on Prometheus). Exits 1 otherwise.
set -euo pipefail
build=${1:?usage: bench/soak.sh BUILD_DIR [SECONDS] [CONNECTIONS] [NODES] [RESTART_EVERY]}
seconds=${2:-600}
conns=${3:-4}
nodes=${4:-1000}
restart_every=${5:-60}
here=$(cd "$(dirname "$0")" && pwd)
tidal="$build/src/cli/tidal"
[ -x "$tidal" ] || { echo "no $tidal: build first" >&2; exit 1; }
for p in wrk prometheus; do
  command -v "$p" >/dev/null || { echo "$p is missing: apt-get install wrk prometheus" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
prom_pid=""
cleanup() {
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

python3 "$here/gen_payloads.py" "$work" "$nodes"
exporter_port=$(port)
(cd "$work" && exec python3 -m http.server "$exporter_port" --bind 127.0.0.1 >/dev/null 2>&1) &
pids+=($!)
prom_port=$(port)
cat >"$work/prometheus.yml" <<YML
global: {scrape_interval: 5s}
scrape_configs:
  - job_name: agents
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$exporter_port']}]
YML
start_prometheus() {
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >>"$work/prometheus.log" 2>&1 &
  prom_pid=$!
}
stop_prometheus() { kill "$prom_pid"; wait "$prom_pid" 2>/dev/null || true; prom_pid=""; }
start_prometheus

serve_port=$(port)
printf 'metricCacheTTL: 5s\n' >"$work/tidal.yaml"
"$tidal" serve --listen "127.0.0.1:$serve_port" --config "$work/tidal.yaml" \
  --prometheus "http://127.0.0.1:$prom_port" --threads "$conns" >"$work/serve.log" 2>&1 &
pids+=($!)
serve_pid=$!

metrics() { curl -s "http://127.0.0.1:$serve_port/metrics"; }
gauge() { metrics | awk -v n="$1" '$1 == n { print $2 }'; }
wait_live() {  # stage 0 on all nodes, up to 120 s
  for _ in $(seq 240); do
    [ "$(gauge tidal_extender_snapshot_nodes)" = "$nodes" ] && [ "$(gauge tidal_extender_fallback_stage)" = 0 ] && return 0
    sleep 0.5
  done
  echo "soak: the extender never saw $nodes nodes in stage 0" >&2; tail -20 "$work/serve.log" >&2; return 1
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$serve_pid/status"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$serve_pid/status"; }
fds() { ls "/proc/$serve_pid/fd" | wc -l; }
wait_live

cat >"$work/verbs.lua" <<LUA
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
  io.write(string.format("RESULT requests=%d p50_us=%d p99_us=%d max_us=%d rps=%.0f connect=%d read=%d write=%d timeout=%d non200=%d\n",
    summary.requests, latency:percentile(50), latency:percentile(99), latency.max,
    summary.requests / (summary.duration / 1e6), summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.timeout, summary.errors.status))
end
LUA

warmup=${WARMUP:-30}
echo "warm-up: $warmup s of load"
wrk -t2 -c"$conns" -d"${warmup}s" --timeout 10s -s "$work/verbs.lua" "http://127.0.0.1:$serve_port" >/dev/null
sleep 2
rss0=$(rss_kb); thr0=$(threads); fd0=$(fds)
echo "after warm-up: RSS ${rss0} kB, ${thr0} threads, ${fd0} fds"

wrk -t2 -c"$conns" -d"${seconds}s" --timeout 10s -s "$work/verbs.lua" "http://127.0.0.1:$serve_port" >"$work/wrk.out" &
wrk_pid=$!
t0=$(date +%s)
restarts=0; peak_rss=$rss0; next_restart=$restart_every
printf '%6s %10s %8s %4s %6s\n' t_s rss_kB threads fds stage
while kill -0 "$wrk_pid" 2>/dev/null; do
  sleep 1
  now=$(($(date +%s) - t0))
  r=$(rss_kb); ((r > peak_rss)) && peak_rss=$r
  if ((now >= next_restart && now < seconds)); then
    next_restart=$((next_restart + restart_every))
    printf '%6d %10d %8d %4d %6s  restart prometheus\n' "$now" "$r" "$(threads)" "$(fds)" "$(gauge tidal_extender_fallback_stage)"
    stop_prometheus; start_prometheus; restarts=$((restarts + 1))
  fi
done
wait "$wrk_pid" || true
line=$(grep '^RESULT' "$work/wrk.out")
echo "wrk: ${line#RESULT }"

wait_live
sleep 2
rss1=$(rss_kb); thr1=$(threads); fd1=$(fds)
bad=$(metrics | awk '/^tidal_extender_requests_total\{.*code="bad_request"/ { s += $2 } END { print s + 0 }')
ok=$(metrics | awk '/^tidal_extender_requests_total\{.*code="ok"/ { s += $2 } END { print s + 0 }')
transitions=$(metrics | awk '/^tidal_extender_fallback_transitions_total/ { s += $2 } END { print s + 0 }')
failures=$(gauge tidal_extender_metrics_source_failures)
echo "prometheus restarts: $restarts; fetch failures: $failures; fallback transitions: $transitions; requests answered ok: $ok, bad_request: $bad"
echo "end: RSS ${rss1} kB (warm-up ${rss0} kB, peak ${peak_rss} kB), ${thr1} threads (${thr0}), ${fd1} fds (${fd0})"

fail=0
errs=$(echo "$line" | awk '{ for (i = 2; i <= NF; ++i) { split($i, kv, "="); if (kv[1] ~ /^(connect|read|write|timeout|non200)$/) s += kv[2] } } END { print s + 0 }')
[ "$errs" -eq 0 ] && [ "$bad" -eq 0 ] || { echo "FAIL: $errs failed requests, $bad bad_request"; fail=1; }
awk -v a="$rss0" -v b="$rss1" 'BEGIN { d = (b - a) / a * 100; printf "RSS change: %+.1f %%\n", d; exit !(d <= 10 && d >= -10) }' ||
  { echo "FAIL: RSS moved by more than 10 %"; fail=1; }
[ "$thr1" -le "$thr0" ] || { echo "FAIL: threads grew"; fail=1; }
[ "$fd1" -le "$fd0" ] || { echo "FAIL: file descriptors grew"; ls -l "/proc/$serve_pid/fd"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
