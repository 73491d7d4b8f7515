#!/usr/bin/env bash
# LLVM 23 from Debian sid in a root of its own under target/tools/sid-llvm23 (scripts/sid-llvm-root.sh).
here=$(dirname "$0")
exec bash "$here/sid-llvm-root.sh" 23
