#!/usr/bin/env bash
# LLVM 24 (LLVM's main branch, Debian experimental's snapshot over sid) in a root of its own under
# target/tools/sid-llvm24 (scripts/sid-llvm-root.sh).
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
here=$(dirname "$0")
exec bash "$here/sid-llvm-root.sh" 24
