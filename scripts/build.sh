#!/usr/bin/env bash
# Configures and builds Tidal (release preset unless PRESET says otherwise):
# everything, or only the targets named, e.g. `scripts/build.sh tidal`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
preset="${PRESET:-release}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" ${1:+--target "$@"}
