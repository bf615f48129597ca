#!/usr/bin/env bash
# Fails when a tracked C++ file is not as clang-format (.clang-format) writes it.
# Fix with: git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (scripts/install-deps.sh)" >&2; exit 1; }
bad=()
while IFS= read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cc' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check-format: not clang-formatted: %s\n' "${bad[@]}" >&2
  echo "check-format: fix with: git ls-files '*.cc' '*.h' | xargs clang-format -i" >&2
  exit 1
fi
echo "check-format: every C++ file is clang-formatted"
