#!/usr/bin/env bash
# The main job: installs, builds, and runs `tidal simulate` on the built-in seed
# scenario (8 nodes × 4 A10), printing the comparison table and writing plots to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >&2
exec build/release/src/cli/tidal simulate --out out "$@"
