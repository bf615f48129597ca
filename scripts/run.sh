#!/usr/bin/env bash
# The main job: installs, builds, and runs `tidal simulate` on the built-in seed
# scenario (8 nodes × 4 A10), printing the comparison table and writing plots to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the executable it runs (a fresh machine's first run builds no test).
scripts/build.sh tidal >&2
exec build/release/src/cli/tidal simulate --out out "$@"
