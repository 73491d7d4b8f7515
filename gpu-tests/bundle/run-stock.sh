#!/usr/bin/env bash
# A part of the GPU bundle for one LLVM release with its stock runtime (built by `cargo xtask
# gpu-test` into target/gpu-bundle-llvm<N>/, N in part.env's RELEASE): programs built by clang N
# with the project's configuration file run through that release's stock libomptarget and the
# CUDA plugin built into it. Nothing of ours is loaded but libomptarget-indirect-register.so
# (lib/), which adds the images' vtables and the per-device index to the table libomptarget
# builds; the device library in each image answers from it. Needs only an x86_64 Linux machine
# with an NVIDIA driver: the runtime comes as Debian packages in debs/ (a Debian 12 release), or
# as runtime.tar.xz with the C library and loader it was built for (a Debian sid release, whose
# programs then run through that loader), unpacked once into a cache outside the bundle.
#
#   ./run-stock.sh [--require-gpu] [--bench] [--out DIR]   (copied into the bundle as run.sh)
#
# 1. e2e/*                  clang N -O2 sm_90 programs (LLVM N's DeviceRTL built from source)
#    e2e-offload-lto/*      the unmodified ones at -O2 -foffload-lto (the rewrite before device LTO)
#    e2e-pageable-memory/*  `requires unified_shared_memory` programs, where the GPU reads pageable
#                           host memory (gpu-test probe says so); skipped elsewhere
# 2. e2e-controls/*         the unmodified ones built by stock clang N: each must fail
#    e2e-controls-frontend/*  those that need the frontend plugin built without it: each must fail
# --bench: the translation benchmark against LLVM N's own __llvm_omp_indirect_call_lookup
#          (table, CSV and PNG), the virtual calls over arrays of host-built objects, and calls
#          through host function pointers as a program built by clang N makes them, against LLVM
#          N's lookup on the same table, with the index and without it (the control)
# 3. compute-sanitizer memcheck on three programs, where the machine has it (last: the slowest);
#    the stock runtime's own cuFuncGetParamInfo error is allowed by name and counted, anything
#    else fails; memcheck-control/out_of_bounds (a write past an allocation) must fail it
# Without a GPU: unpacks and checks the runtime, prints "no NVIDIA GPU: built, not run" and exits
# 0 (1 with --require-gpu).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
# RELEASE (the LLVM major), LIBOMPTARGET (its file name), RUNTIME (debs or private) and, for debs,
# RUNTIME_LIBRARIES (the paths in the packages of libomptarget and what it loads), written by
# the build.
. "$here/part.env"
parse_args "$@"
if [ "$RUNTIME" = private ]; then
  use_private_runtime "$LIBOMPTARGET"
else
  # shellcheck disable=SC2086 # a list of paths without spaces
  use_runtime $RUNTIME_LIBRARIES
fi
check_programs_load
probe_gpu
# libomptarget 22's CUDA plugin opens the driver as `libcuda.so`, the name a CUDA toolkit's
# development files give it, not the driver's own `libcuda.so.1`: where only the driver is
# installed it finds no device. Link the name in the cache where the system lacks it (for every
# release's part: it costs nothing where a release opens `libcuda.so.1`).
driver_library() { # prints the driver's libcuda.so.1 when no libcuda.so is on the search path
  ldconfig -p 2>/dev/null | grep -q "[[:space:]]libcuda\.so " && return
  local dir
  for dir in ${LD_LIBRARY_PATH//:/ } /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [ -e "$dir/libcuda.so" ] && return
  done
  for dir in ${LD_LIBRARY_PATH//:/ } /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [ -e "$dir/libcuda.so.1" ] && { echo "$dir/libcuda.so.1"; return; }
  done
  ldconfig -p 2>/dev/null | awk '/[[:space:]]libcuda\.so\.1 .*x86-64/ {print $NF; exit}'
}
driver=$(driver_library)
if [ -n "$driver" ]; then
  mkdir -p "$runtime/driver" && ln -sf "$driver" "$runtime/driver/libcuda.so"
  # (A private runtime's loader has the directory on its library path already.)
  [ "$RUNTIME" = private ] || export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$runtime/driver
  echo "libcuda.so: $driver, linked in $runtime/driver (libomptarget $RELEASE opens that name)"
fi
# libomptarget's CUDA plugin reports a fault by the driver's error string
# (`error in cuStreamSynchronize: an illegal memory access was encountered`).
fault_pattern=("an illegal memory access was encountered" "an illegal instruction was encountered"
  "the device encountered an invalid program counter")

run_e2e_folder "1. e2e" "$here/e2e"
run_e2e_folder "1. e2e -foffload-lto" "$here/e2e-offload-lto"
# libomptarget takes `requires unified_shared_memory` without asking the GPU whether it can
# read pageable host memory: on a GPU that cannot, these programs fault, and prove nothing.
for program in "$here"/e2e-pageable-memory/*; do
  if [ "$pageable_memory" = 1 ]; then
    step "1. e2e, unified shared memory: $(basename "$program")" run_e2e "$program"
  else
    skip "1. e2e, unified shared memory: $(basename "$program")" \
      "GPU 0 cannot read pageable host memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0: no HMM)"
  fi
done
run_control_folder "2. control" "$here/e2e-controls" "the project (stock clang $RELEASE)"
run_control_folder "2. control" "$here/e2e-controls-frontend" "the frontend plugin"

run_benches "bench: translation, ours vs LLVM $RELEASE's lookup"

# Programs built the README's way, as a user runs them: the project's translation (its index) and
# LLVM's own lookup on the same table, and the control without the index.
translation_bench() { # run-name [environment...]
  local name=$1
  shift
  env "$@" OMP_TARGET_OFFLOAD=MANDATORY ${launch[@]+"${launch[@]}"} "$here/bench/translation_gpu" "$name" \
    > "$out/translation_gpu_$name.txt" 2>&1
  local rc=$?
  grep -vE '^[a-z0-9_]+,[0-9]+,[0-9.]+$' "$out/translation_gpu_$name.txt"
  [ $rc -eq 0 ] && grep -q "^translation_gpu: [0-9]* checks, 0 failed$" "$out/translation_gpu_$name.txt"
}
if [ $bench -eq 1 ]; then
  step "bench: translation as clang $RELEASE builds it, the project vs LLVM $RELEASE's lookup" translation_bench index
  step "bench: the same without the index (the control)" translation_bench index_off OMPTARGET_INDIRECT_INDEX=0
fi

# libomptarget's CUDA plugin (22) learns a kernel's argument size by asking cuFuncGetParamInfo for
# parameter 0, 1, ... until the driver answers CUDA_ERROR_INVALID_VALUE (its `initArgsSize`, once
# per kernel, from __tgt_target_kernel): memcheck reports that last answer as an API error.
# Allowed by name and counted; any other error fails the step.
known_api_error=('Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuFuncGetParamInfo.'
  '__tgt_target_kernel [')
sanitizer=$(find_sanitizer)
if [ -n "$sanitizer" ]; then
  for program in host_scene unmodified_virtual table; do
    step "3. memcheck: e2e $program" run_memcheck "$sanitizer" "$here/e2e/$program"
  done
  step "3. memcheck, control: a write past an allocation must fail it" run_memcheck_control "$sanitizer" \
    "$here/memcheck-control/out_of_bounds"
else
  skip "3. memcheck" "compute-sanitizer not found"
fi
finish
