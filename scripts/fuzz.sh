#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and runs
# each for SECONDS (default 60), seeded from fuzz/corpus/<target>/ and the seed
# files its CMake line names.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]     JOBS=N runs N targets at a time (default 1)
# PRESET=sanitize takes them from CI's sanitizer build (tests and fuzz targets in one).
# A crash, hang (> 10 s on one input), leak, UB or broken invariant stops that
# target; the script prints the reproducer and exits 1 once all have run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
[ $# -gt 0 ] && shift
jobs="${JOBS:-1}"

preset="${PRESET:-fuzz}"
scripts/install-deps.sh >&2
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" >&2

manifest="build/$preset/fuzz/targets.tsv"
out="build/$preset/run"
mkdir -p "$out/logs"

wanted() {
  [ $# -eq 1 ] && return 0
  local name=$1 t
  shift
  for t in "$@"; do [ "$t" = "$name" ] && return 0; done
  return 1
}

# Runs one target; its one-line summary goes to $out/logs/NAME.result.
run_one() {
  local name=$1 bin=$2 dict=$3 corpus=$4 seeds=$5
  local work="$out/corpus/$name" art="$out/artifacts/$name/" log="$out/logs/$name.log"
  rm -rf "$art"
  mkdir -p "$work" "$art"
  [ -d "$corpus" ] && cp -n "$corpus"/* "$work"/ 2>/dev/null || true
  if [ -n "$seeds" ]; then
    local IFS=:
    for s in $seeds; do cp -n "$s" "$work"/ 2>/dev/null || true; done
  fi
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$art")
  [ "$dict" != "-" ] && args+=(-dict="$dict")
  local rc=0
  "$bin" "${args[@]}" "$work" >"$log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  local files
  files=$(find "$work" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    echo "ok    $name: ${execs:-?} executions in ${seconds} s, corpus $files inputs" >"$out/logs/$name.result"
  else
    local repro
    repro=$(find "$art" -type f | head -1)
    {
      echo "FAIL  $name: exit $rc after ${execs:-?} executions; log $log"
      grep -m3 -E "ERROR: |runtime error|fuzz invariant failed|SUMMARY" "$log" | sed 's/^/      /'
      echo "      reproducer: ${repro:-none written}"
      echo "      replay: $bin ${repro:-<input>}"
    } >"$out/logs/$name.result"
  fi
}

names=()
running=0
while IFS=$'\t' read -r name bin dict corpus seeds; do
  [ -z "$name" ] && continue
  wanted "$name" "$@" || continue
  names+=("$name")
  run_one "$name" "$bin" "$dict" "$corpus" "$seeds" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done <"$manifest"
wait

if [ ${#names[@]} -eq 0 ]; then
  echo "fuzz: no target matches: $*" >&2
  exit 2
fi
failed=0
for name in "${names[@]}"; do
  cat "$out/logs/$name.result"
  grep -q '^FAIL' "$out/logs/$name.result" && failed=1
done
exit "$failed"
