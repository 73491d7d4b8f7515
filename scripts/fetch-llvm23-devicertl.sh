#!/usr/bin/env bash
# LLVM 23's GPU DeviceRTL built from source under target/tools/llvm23-devicertl (scripts/devicertl-from-source.sh).
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
exec bash "$(dirname "$0")/devicertl-from-source.sh" 23
