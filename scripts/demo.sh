#!/usr/bin/env bash
# The demo command: installs what is missing (scripts/setup.sh), then `cargo xtask demo`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
exec cargo xtask demo "$@"
