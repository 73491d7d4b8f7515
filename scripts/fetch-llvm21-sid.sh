#!/usr/bin/env bash
# LLVM 21 from Debian sid in a root of its own under target/tools/sid-llvm21 (scripts/sid-llvm-root.sh).
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
here=$(dirname "$0")
exec bash "$here/sid-llvm-root.sh" 21
