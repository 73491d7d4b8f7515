#!/usr/bin/env bash
# LLVM 23's GPU DeviceRTL built from source under target/tools/llvm23-devicertl (scripts/devicertl-from-source.sh).
exec bash "$(dirname "$0")/devicertl-from-source.sh" 23
