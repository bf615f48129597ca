#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test with CTest, the e2e
# scenarios on a real control plane included (label e2e; `-LE e2e` leaves them out).
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET="${PRESET:-release}" scripts/build.sh
# Extra CTest arguments, e.g. CTEST_ARGS="-LE e2e".
# shellcheck disable=SC2086
ctest --preset "${PRESET:-release}" ${CTEST_ARGS:-}
