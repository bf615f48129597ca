#!/usr/bin/env bash
# Load test of `tidal serve` /prioritize at 1 000 nodes on loopback with wrk,
# side by side in the same run with nginx serving a static file of the same
# size as the response: the floor of what HTTP costs on this machine.
#
#   bench/extender-wrk.sh BUILD_DIR [SECONDS] [CONNECTIONS] [NODES]
#
# A real Prometheus scrapes one static exposition with NODES agents' series
# (honor_labels keeps their node label), so the extender decides on live
# metrics, not in fallback. Prints p50, p99 and requests/s for both.
# PARALLELISM sets `tidal serve --parallelism` (default 0: the cores, up to 4);
# TTL its metricCacheTTL (default 5s; 25s leaves a 10 s run without a refresh).
set -euo pipefail
build=${1:?usage: bench/extender-wrk.sh BUILD_DIR [SECONDS] [CONNECTIONS] [NODES]}
seconds=${2:-20}
conns=${3:-8}
wrk_threads=$(( conns < 2 ? 1 : 2 ))
nodes=${4:-1000}
tidal="$build/src/cli/tidal"
[ -x "$tidal" ] || { echo "no $tidal: build first" >&2; exit 1; }
for p in wrk nginx prometheus; do
  command -v "$p" >/dev/null || PATH="$PATH:/usr/sbin"
  command -v "$p" >/dev/null || { echo "$p is missing: apt-get install wrk nginx-light prometheus" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

/usr/bin/python3 "$(dirname "$0")/gen_payloads.py" "$work" "$nodes"

exporter_port=$(port)
(cd "$work" && exec chrt --idle 0 /usr/bin/python3 -m http.server "$exporter_port" --bind 127.0.0.1 >/dev/null 2>&1) &
pids+=($!)
prom_port=$(port)
cat > "$work/prometheus.yml" <<YML
global: {scrape_interval: 5s}
scrape_configs:
  - job_name: agents
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$exporter_port']}]
YML
chrt --idle 0 prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
serve_port=$(port)
printf 'metricCacheTTL: %s\n' "${TTL:-5s}" >"$work/tidal.yaml"
"$tidal" serve --listen "127.0.0.1:$serve_port" --config "$work/tidal.yaml" \
  --prometheus "http://127.0.0.1:$prom_port" --threads "$conns" --parallelism "${PARALLELISM:-0}" \
  --log-level warn >"$work/serve.log" 2>&1 &
pids+=($!)

echo "waiting for the extender to see $nodes nodes..."
for _ in $(seq 1 120); do
  if curl -s "http://127.0.0.1:$serve_port/metrics" | grep -q "^tidal_extender_snapshot_nodes $nodes\$"; then break; fi
  sleep 1
done
curl -s "http://127.0.0.1:$serve_port/metrics" | grep -q "^tidal_extender_snapshot_nodes $nodes\$" ||
  { echo "the extender never saw $nodes nodes"; cat "$work/serve.log"; exit 1; }

curl -s -o "$work/response.json" -X POST -H 'Content-Type: application/json' \
  --data-binary @"$work/prioritize.json" "http://127.0.0.1:$serve_port/prioritize"
mkdir -p "$work/www"
chmod -R a+rX "$work"  # nginx workers run as www-data
cp "$work/response.json" "$work/www/response.json"
chmod -R a+rX "$work"
nginx_port=$(port)
cat > "$work/nginx.conf" <<NGX
daemon off;
worker_processes 1;
error_log $work/nginx-error.log;
pid $work/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  tcp_nodelay on;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$nginx_port; root $work/www; }
}
NGX
nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)
sleep 1

cat > "$work/post.lua" <<LUA
local f = io.open("$work/prioritize.json", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
LUA
cat > "$work/report.lua" <<'LUA'
done = function(summary, latency, requests)
  io.write(string.format("RESULT p50_us=%d p99_us=%d rps=%.0f errors=%d\n", latency:percentile(50),
    latency:percentile(99), summary.requests / (summary.duration / 1e6),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status +
    summary.errors.timeout))
end
LUA
cat "$work/post.lua" "$work/report.lua" > "$work/tidal.lua"

echo "response: $(wc -c <"$work/response.json") bytes, request: $(wc -c <"$work/prioritize.json") bytes; $seconds s, $conns connections, $wrk_threads wrk threads"
tidal_line=$(wrk -t"$wrk_threads" -c"$conns" -d"${seconds}s" -s "$work/tidal.lua" "http://127.0.0.1:$serve_port/prioritize" | grep RESULT)
# The extender's own view of the same requests: how many took over 1 ms from
# decoding to encoding (the rest of a slow request's time is HTTP and scheduling).
server_side=$(curl -s "http://127.0.0.1:$serve_port/metrics" | python3 -c '
import re, sys
over = total = 0
for line in sys.stdin:
    m = re.match(r"tidal_extender_request_duration_seconds_bucket\{verb=\"prioritize\",le=\"([^\"]+)\"\} (\S+)", line)
    if m and m.group(1) == "0.001": within = float(m.group(2))
    if m and m.group(1) == "+Inf": total = float(m.group(2))
print(f"server_side_over_1ms={total - within:.0f} of {total:.0f}")')
nginx_line=$(wrk -t"$wrk_threads" -c"$conns" -d"${seconds}s" -s "$work/report.lua" "http://127.0.0.1:$nginx_port/response.json" | grep RESULT)
printf '%-28s %s\n' "tidal serve /prioritize" "${tidal_line#RESULT } $server_side" \
  "nginx static (same size)" "${nginx_line#RESULT }"
