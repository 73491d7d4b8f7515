#!/usr/bin/env bash
# The one test command: installs what is missing (scripts/setup.sh suite), then runs every test that
# needs no GPU (`cargo xtask test`). Ends with "xtask: N passed, M failed"; exits non-zero on any
# failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh" suite
cd "$root"
exec cargo xtask test "$@"
