#!/usr/bin/env bash
# A part of the GPU bundle for one LLVM release with its stock runtime (built by `cargo xtask
# gpu-test` into target/gpu-bundle-llvm<N>/, N in part.env's RELEASE): programs built by clang N
# with the project's configuration file run through that release's stock libomptarget and the
# CUDA plugin built into it. Nothing of ours is loaded but libomptarget-indirect-register.so
# (lib/), which adds the images' vtables and the per-device index to the table libomptarget
# builds; the device library in each image answers from it. The programs travel packed
# (programs.tar.xz), unpacked into a cache outside the bundle. Needs only an x86_64 Linux machine
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
#    corpus/*, demo/scene   the stock-parity corpus and the demo's scene (part llvm22 alone):
#                           the corpus prints what stock's x86_64 builds print; the scene renders
#                           what the host renders
# 2. e2e-controls/*         the unmodified ones built by stock clang N: each must fail
#    e2e-controls-frontend/*  those that need the frontend plugin built without it: each must fail
#    e2e/vtables-off.controls  the programs whose objects the host builds, run without the
#                           vtables in the table (OMPTARGET_INDIRECT_VTABLES=0): each must fail
#    e2e/trap.arguments     programs and the argument that makes their device code call what has
#                           no device copy: each must stop with the stub's line
#    corpus-stock/*, demo-control/scene   stock's builds: the same output where the strict device
#                           runs their x86_64 builds, a fault where it stops them; the scene faults
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
unpack_programs
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

run_e2e_folder "1. e2e" "$programs/e2e"
run_host_call_folder "1. host calls:" "$programs/e2e"
run_e2e_folder "1. e2e -foffload-lto" "$programs/e2e-offload-lto"
# libomptarget takes `requires unified_shared_memory` without asking the GPU whether it can
# read pageable host memory: on a GPU that cannot, these programs fault, and prove nothing.
for program in "$programs"/e2e-pageable-memory/*; do
  if [ "$pageable_memory" = 1 ]; then
    step "1. e2e, unified shared memory: $(basename "$program")" run_e2e "$program"
  else
    skip "1. e2e, unified shared memory: $(basename "$program")" \
      "GPU 0 cannot read pageable host memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0: no HMM)"
  fi
done
run_control_folder "2. control" "$programs/e2e-controls" "the project (stock clang $RELEASE)"
run_control_folder "2. control" "$programs/e2e-controls-frontend" "the frontend plugin"
# The same programs whose objects the host builds, run without the vtables (and Fortran type
# descriptors) in the table: device code then reads the host's, and each must fault.
run_control_without_vtables() { OMPTARGET_INDIRECT_VTABLES=0 run_control "$@"; }
while read -r name; do
  [ -n "$name" ] || continue
  step "2. control: $name without the vtables in the table fails" run_control_without_vtables "$programs/e2e/$name"
done <"$programs/e2e/vtables-off.controls"
# A trap argument makes device code call a function or binding with no device copy: the stub
# stops the kernel, and CUDA prints its line as a failed assertion (`__assertfail`).
run_trap() { # program argument
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY timeout 120 ${launch[@]+"${launch[@]}"} "$1" "$2" 2>&1)
  local rc=$?
  echo "$output" | head -n 8
  echo "exit status $rc"
  [ $rc -ne 0 ] && echo "$output" | grep -q "omptarget-indirect: .* is not compiled for the device"
}
while read -r name argument; do
  [ -n "$name" ] || continue
  step "2. control: $name $argument stops with the stub's line" run_trap "$programs/e2e/$name" "$argument"
done <"$programs/e2e/trap.arguments"

# A program prints exactly what `expected` holds (its stdout; stderr goes to the step's log).
run_printing() { # program expected
  local printed
  printed=$out/$(basename "$(dirname "$1")")-$(basename "$1").stdout
  OMP_TARGET_OFFLOAD=MANDATORY timeout 120 ${launch[@]+"${launch[@]}"} "$1" >"$printed"
  local rc=$?
  cat "$printed"
  echo "exit status $rc"
  [ $rc -eq 0 ] && cmp -s "$printed" "$2" && return
  echo "expected:"
  cat "$2"
  return 1
}

# The demo's scene renders on the GPU, compares its picture with the host's render of the same
# scene and its device copies' calls with the host's, and says so; both pictures go to $out.
run_scene() { # program
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY timeout 120 ${launch[@]+"${launch[@]}"} "$1" \
    "$out/scene.ppm" "$out/scene-host.ppm" 2>&1)
  local rc=$?
  echo "$output" | tail -n 3
  [ $rc -eq 0 ] && echo "$output" | grep -q "the same as the host's render$"
}

# The stock-parity corpus and the demo (in the part of the release CI builds them with): the
# project's builds print what stock's x86_64 builds print on the x86_64 device; stock's own GPU
# builds print the same where the strict device ran their x86_64 builds (nothing host-only
# reached) and must fault where it stopped them (`corpus-stock/<name>.expect`).
if [ -d "$programs/corpus" ]; then
  for program in "$programs"/corpus/*; do
    case $program in *.expected) continue ;; esac
    name=$(basename "$program")
    step "1. corpus: $name prints what stock's x86_64 build prints" run_printing "$program" "$program.expected"
    stock=$programs/corpus-stock/$name
    if [ "$(cat "$stock.expect")" = faults ]; then
      step "2. control: corpus $name, stock, faults (the strict device stops its x86_64 build)" run_control "$stock"
    else
      step "1. corpus, stock: $name prints the same (the strict device runs its x86_64 build)" \
        run_printing "$stock" "$program.expected"
    fi
  done
  step "1. demo: examples/scene.cpp renders on the GPU what the host renders" run_scene "$programs/demo/scene"
  step "2. control: the scene without the project faults" run_control "$programs/demo-control/scene" \
    "$out/scene-control.ppm"
fi

run_benches "bench: translation, ours vs LLVM $RELEASE's lookup"

# Programs built the README's way, as a user runs them: the project's translation (its index) and
# LLVM's own lookup on the same table, and the control without the index.
translation_bench() { # run-name [environment...]
  local name=$1
  shift
  env "$@" OMP_TARGET_OFFLOAD=MANDATORY ${launch[@]+"${launch[@]}"} "$programs/bench/translation_gpu" "$name" \
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
    step "3. memcheck: e2e $program" run_memcheck "$sanitizer" "$programs/e2e/$program"
  done
  step "3. memcheck, control: a write past an allocation must fail it" run_memcheck_control "$sanitizer" \
    "$programs/memcheck-control/out_of_bounds"
else
  skip "3. memcheck" "compute-sanitizer not found"
fi
finish
