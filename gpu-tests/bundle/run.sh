#!/usr/bin/env bash
# The GPU bundle's first part, LLVM 16 (built by `cargo xtask gpu-test` into target/gpu-bundle/).
# Needs only an x86_64 Linux machine with an NVIDIA driver: the LLVM 16 runtime comes as Debian
# packages in debs/, unpacked once into a cache outside the bundle (common.sh).
#
#   ./run.sh [--require-gpu] [--bench] [--out DIR]
#
# 1. gpu-test lookup       the device lookup (Rust kernels + our device runtime) on random tables
# 2. gpu-test plugin-abi   libomptarget.rtl.cuda.so through its C ABI, cuMemGetInfo before/after
# 3. e2e/*                 clang 19 sm_90 programs through libomptarget 16 + our CUDA plugin
#    e2e-controls/*        the unmodified ones built without the pass plugin: each must fail
#    e2e-controls-frontend/*  those that need the frontend plugin built without it: each must fail
# --bench: then the translation benchmark (table, CSV and PNG) and the virtual calls over arrays
#          of host-built objects (virtual_arrays_gpu.txt)
# 4. compute-sanitizer memcheck on 1 and 2, where the machine has it (last: it is the slowest)
# --out DIR (default ./results) receives everything the run makes: run.log (this whole output),
# one log per step, nvidia-smi.txt, the benchmark's table, CSV and plot.
# Without a GPU: unpacks and checks the runtime, prints "no NVIDIA GPU: built, not run" and exits
# 0 (1 with --require-gpu).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
parse_args "$@"
unpack_programs
use_runtime usr/lib/llvm-16/lib/libomptarget.so.16 usr/lib/llvm-16/lib/libomp.so.5 \
  usr/lib/x86_64-linux-gnu/libLLVM-16.so.1
check_programs_load
probe_gpu
# Our CUDA plugin reports a fault by the driver's error name.
fault_pattern=("CUDA_ERROR_ILLEGAL_ADDRESS" "CUDA_ERROR_ILLEGAL_INSTRUCTION")

step "1. device lookup" "$here/bin/gpu-test" lookup --bundle "$here"
step "2. plugin C ABI" "$here/bin/gpu-test" plugin-abi --bundle "$here"
run_e2e_folder "3. e2e" "$programs/e2e"
run_host_call_folder "3. host calls:" "$programs/e2e"
# Negative controls: the unmodified programs built without the pass plugin call host addresses
# on the GPU; the programs whose objects only the host builds, built without the frontend
# plugin, find no vtable of their classes on the device.
run_control_folder "3. control" "$programs/e2e-controls" "the pass plugin"
run_control_folder "3. control" "$programs/e2e-controls-frontend" "the frontend plugin"

run_benches "bench: translation, ours vs LLVM 19's lookup"

sanitizer=$(find_sanitizer)
if [ -n "$sanitizer" ]; then
  step "4. memcheck: device lookup" "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
    "$here/bin/gpu-test" lookup --bundle "$here"
  step "4. memcheck: plugin C ABI" "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
    "$here/bin/gpu-test" plugin-abi --bundle "$here"
else
  skip "4. memcheck" "compute-sanitizer not found"
fi
finish
