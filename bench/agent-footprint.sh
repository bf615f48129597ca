#!/usr/bin/env bash
# Footprint of the node agent, `tidal-agent` as the DaemonSet runs it (1 s collection interval, 8 stand-in GPUs) next to
# Debian's prometheus-node-exporter, measured in the same run on the same machine.
# Both are scraped once a second (the node exporter collects on scrape).
#
# usage: bench/agent-footprint.sh [--kubelet] [BUILD_DIR] [SECONDS] [GPUS]
#   --kubelet  as deploy/overlays/kubelet-pods runs it: the agent also reads an
#              https kubelet stand-in's /pods every interval (TLS, OpenSSL loaded)
#   BUILD_DIR  a configured and built tree (default: build); needs src/cli/tidal-agent,
#              src/cli/tidal-https.so and tests/nvml_stub/lib/libnvidia-ml.so.1
# Target: at most 6 MiB RSS and 0.5 % of one core for tidal agent (the DaemonSet's flags).
set -euo pipefail

kubelet=0
if [ "${1:-}" = "--kubelet" ]; then kubelet=1; shift; fi
build=${1:-build}
duration=${2:-60}
gpus=${3:-8}
tidal="$build/src/cli/tidal-agent"  # what the DaemonSet runs
stub="$build/tests/nvml_stub/lib/libnvidia-ml.so.1"
exporter=/usr/bin/prometheus-node-exporter
[ -x "$tidal" ] || { echo "agent-footprint: $tidal not built" >&2; exit 2; }
[ -f "$stub" ] || { echo "agent-footprint: $stub not built (ninja nvml_stub)" >&2; exit 2; }
if [ ! -x "$exporter" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq --no-install-recommends prometheus-node-exporter >/dev/null
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 8 GPUs on an NVSwitch fabric (18 links each), memory in use and NVLink traffic.
for ((g = 0; g < gpus; g++)); do
  echo "gpu $g uuid GPU-bench-$g"
  echo "gpu $g name NVIDIA H100 80GB HBM3"
  printf 'gpu %d bus 00000000:%02X:00.0\n' "$g" $((0x18 + g))
  echo "gpu $g memory 85899345920 536870912 $(((g + 1) * 8589934592))"
  for ((l = 0; l < 18; l++)); do echo "gpu $g link $l switch"; done
  echo "gpu $g speed 26562"
  echo "gpu $g rate $((1000000 * (g + 1))) 500000"
  echo "gpu $g procs 2"
done > "$work/nvml.script"

agent_port=$(free_port)
exporter_port=$(free_port)
kubelet_flags=()
if [ "$kubelet" -eq 1 ]; then
  # A self-signed kubelet stand-in on loopback serving an empty PodList over TLS.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$work/kubelet.key" -out "$work/kubelet.crt" 2>/dev/null
  kubelet_port=$(free_port)
  python3 - "$kubelet_port" "$work/kubelet.crt" "$work/kubelet.key" >"$work/kubelet.log" 2>&1 <<'EOF' &
import http.server, ssl, sys
class Pods(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"kind":"PodList","apiVersion":"v1","items":[]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Pods)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
EOF
  pids+=($!)
  kubelet_flags=(--kubelet-url "https://127.0.0.1:$kubelet_port/pods" --kubelet-ca "$work/kubelet.crt"
                 --kubelet-token-file "")
fi
TIDAL_NVML_STUB_SCRIPT="$work/nvml.script" NODE_NAME=bench-node \
  "$tidal" agent --listen "127.0.0.1:$agent_port" --interval 1s --nvml-lib "$stub" \
  "${kubelet_flags[@]}" 2>"$work/agent.log" &
pids+=($!); agent_pid=$!
"$exporter" --web.listen-address="127.0.0.1:$exporter_port" >"$work/exporter.log" 2>&1 &
pids+=($!); exporter_pid=$!

for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$agent_port/healthz" >/dev/null &&
    curl -sf "http://127.0.0.1:$exporter_port/metrics" >/dev/null && break
  sleep 0.2
done
gpu_series=$(curl -sf "http://127.0.0.1:$agent_port/metrics" | grep -c '^ai_gpu_memory_used_bytes{' || true)
[ "$gpu_series" -eq "$gpus" ] || { echo "agent-footprint: expected $gpus GPUs, got $gpu_series" >&2; cat "$work/agent.log" >&2; exit 1; }
if [ "$kubelet" -eq 1 ]; then
  sleep 2  # a collection after the stand-in is up
  curl -sf "http://127.0.0.1:$agent_port/metrics" |
    grep -q '^ai_collector_up{node="bench-node",collector="nvlink_competition",reason=""} 1' ||
    { echo "agent-footprint: the agent does not read the kubelet stand-in's pods" >&2
      curl -sf "http://127.0.0.1:$agent_port/metrics" | grep nvlink_competition >&2; exit 1; }
fi

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

sleep 3  # past start-up
a0=$(ticks "$agent_pid"); e0=$(ticks "$exporter_pid"); t0=$(date +%s.%N)
a_max=0; e_max=0; a_sum=0; e_sum=0; n=0
for ((i = 0; i < duration; i++)); do
  curl -sf "http://127.0.0.1:$agent_port/metrics" >/dev/null
  curl -sf "http://127.0.0.1:$exporter_port/metrics" >/dev/null
  a=$(rss_kb "$agent_pid"); e=$(rss_kb "$exporter_pid")
  ((a > a_max)) && a_max=$a; ((e > e_max)) && e_max=$e
  a_sum=$((a_sum + a)); e_sum=$((e_sum + e)); n=$((n + 1))
  sleep 1
done
a1=$(ticks "$agent_pid"); e1=$(ticks "$exporter_pid"); t1=$(date +%s.%N)

report() {  # name ticks0 ticks1 rss_sum rss_max
  awk -v name="$1" -v d="$(($3 - $2))" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
    -v avg="$(($4 / n))" -v max="$5" \
    'BEGIN { printf "%-26s %10.1f %10.1f %12.3f\n", name, avg / 1024, max / 1024, d / hz / (t1 - t0) * 100 }'
}
how="the DaemonSet's flags"
[ "$kubelet" -eq 1 ] && how="with --kubelet-url (https stand-in), as deploy/overlays/kubelet-pods"
echo "footprint over ${duration} s, 1 s interval/scrape, $gpus stand-in GPUs, $(nproc) cores; agent: $how"
printf "%-26s %10s %10s %12s\n" "agent" "RSS avg MiB" "RSS max MiB" "CPU % core"
report "tidal-agent" "$a0" "$a1" "$a_sum" "$a_max"
report "prometheus-node-exporter" "$e0" "$e1" "$e_sum" "$e_max"
