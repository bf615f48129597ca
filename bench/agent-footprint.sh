#!/usr/bin/env bash
# Footprint of the node agent, `tidal-agent` as the DaemonSet runs it (1 s collection interval, 8 stand-in GPUs) next to
# Debian's prometheus-node-exporter, measured in the same run on the same machine.
# Both are scraped once a second (the node exporter collects on scrape).
#
# usage: bench/agent-footprint.sh [BUILD_DIR] [SECONDS] [GPUS]
#   BUILD_DIR  a configured and built tree (default: build); needs src/cli/tidal-agent and
#              tests/nvml_stub/lib/libnvidia-ml.so.1
# Target: at most 10 MB RSS and 0.5 % of one core for tidal agent.
set -euo pipefail

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
TIDAL_NVML_STUB_SCRIPT="$work/nvml.script" NODE_NAME=bench-node \
  "$tidal" agent --listen "127.0.0.1:$agent_port" --interval 1s --nvml-lib "$stub" \
  2>"$work/agent.log" &
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
echo "footprint over ${duration} s, 1 s interval/scrape, $gpus stand-in GPUs, $(nproc) cores"
printf "%-26s %10s %10s %12s\n" "agent" "RSS avg MiB" "RSS max MiB" "CPU % core"
report "tidal-agent" "$a0" "$a1" "$a_sum" "$a_max"
report "prometheus-node-exporter" "$e0" "$e1" "$e_sum" "$e_max"
