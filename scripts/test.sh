#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET="${PRESET:-release}" scripts/build.sh
ctest --preset "${PRESET:-release}"
