#!/usr/bin/env bash
# The demo command: installs what the demo needs and is missing (scripts/setup.sh demo), then
# `cargo xtask demo`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh" demo
cd "$root"
exec cargo xtask demo "$@"
