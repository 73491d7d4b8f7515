#!/usr/bin/env bash
# The GPU bundle's driver (built by `cargo xtask gpu-test` into target/gpu-bundle/). Needs only
# an x86_64 Linux machine with an NVIDIA driver: the LLVM 16 runtime comes as Debian packages in
# debs/, unpacked once into a cache outside the bundle ($XDG_CACHE_HOME or ~/.cache, keyed by the
# packages' checksum; never into / and never into the bundle, which must stay small to travel).
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
require_gpu=0
bench=0
out=$PWD/results
while [ $# -gt 0 ]; do
  case $1 in
    --require-gpu) require_gpu=1 ;;
    --bench) bench=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--require-gpu] [--bench] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done

# The LLVM 16 runtime: libomptarget.so.16, libomp.so.5, libLLVM-16.so.1, and the libraries
# libLLVM needs, each used only where the system lacks that soname.
mkdir -p "$out" || { echo "cannot create $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
exec > >(tee "$out/run.log") 2>&1
debs_sum=$(cat "$here"/debs/*.deb | cksum | cut -d' ' -f1)
runtime=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/omptarget-indirect-gpu-bundle/$debs_sum
unpack() { # deb dest
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else
    python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
  fi
}
if [ ! -e "$runtime/lib/libomptarget.so.16" ]; then
  rm -rf "$runtime"
  mkdir -p "$runtime/root" "$runtime/lib" "$runtime/deps" || exit 1
  for deb in "$here"/debs/*.deb; do
    unpack "$deb" "$runtime/root" || { echo "cannot unpack $deb" >&2; exit 1; }
  done
  ln -s "$runtime/root/usr/lib/llvm-16/lib/libomptarget.so.16" "$runtime/lib/"
  ln -s "$runtime/root/usr/lib/llvm-16/lib/libomp.so.5" "$runtime/lib/"
  ln -s "$runtime/root/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1" "$runtime/lib/"
  for f in "$runtime"/root/usr/lib/x86_64-linux-gnu/lib*.so.* "$runtime"/root/lib/x86_64-linux-gnu/lib*.so.*; do
    [ -e "$f" ] || continue
    soname=$(basename "$f")
    case $soname in libLLVM-16* | *.so.*.*) continue ;; esac # sonames only (lib*.so.N)
    if ! ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$soname "; then
      ln -sf "$f" "$runtime/deps/$soname"
    fi
  done
fi
export LD_LIBRARY_PATH=$here/lib:$runtime/lib:$runtime/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd "$runtime/lib/libomptarget.so.16" | grep -q "not found"; then
  echo "libomptarget 16 cannot be loaded here:" >&2
  ldd "$runtime/lib/libomptarget.so.16" | grep "not found" >&2
  exit 1
fi
echo "LLVM 16 runtime: $(ls "$runtime/lib" | tr '\n' ' ')(+ $(ls "$runtime/deps" | wc -l) libraries this system lacks)"

probe=$("$here/bin/gpu-test" probe)
rc=$?
if [ $rc -eq 3 ]; then
  echo "no NVIDIA GPU: built, not run"
  exit $require_gpu
fi
if [ $rc -ne 0 ]; then
  echo "gpu-test probe failed ($rc): $probe" >&2
  exit 1
fi
echo "$probe"
gpus=${probe%% *}
if [ -z "$gpus" ] || [ "$gpus" -lt 1 ] 2>/dev/null; then
  echo "gpu-test probe found no device although it did not say so: $probe" >&2
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi >"$out/nvidia-smi.txt" 2>&1

passed=0
failed=0
skipped=0
step() { # name command...
  local name=$1
  shift
  echo "== $name"
  local log
  log=$out/$(echo "$name" | tr -c 'A-Za-z0-9.\n-' '_').log
  if "$@" > >(tee "$log") 2>&1; then
    echo "-- passed: $name"
    passed=$((passed + 1))
  else
    echo "-- FAILED: $name"
    failed=$((failed + 1))
  fi
}
skip() {
  echo "== $1"
  echo "-- skipped: $1: $2"
  skipped=$((skipped + 1))
}

step "1. device lookup" "$here/bin/gpu-test" lookup --bundle "$here"
step "2. plugin C ABI" "$here/bin/gpu-test" plugin-abi --bundle "$here"

run_e2e() { # program
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY "$1" 2>&1)
  local rc=$?
  echo "$output" | tail -n 3
  [ $rc -eq 0 ] && echo "$output" | grep -q "^$(basename "$1"): [0-9]* checks, 0 failed$"
}
for program in "$here"/e2e/*; do
  name=$(basename "$program")
  if [ "$name" = devices ] && [ "$gpus" -lt 2 ]; then
    skip "3. e2e $name" "needs 2 GPUs, this machine has $gpus"
    continue
  fi
  step "3. e2e $name" run_e2e "$program"
done

# Negative controls: the unmodified programs built without the pass plugin call host addresses
# on the GPU. Each must fail for that reason: the GPU faults (CUDA_ERROR_ILLEGAL_ADDRESS or
# _INSTRUCTION, which the plugin reports) or checks fail; passing, or failing otherwise, fails.
run_control() { # program
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY timeout 120 "$1" 2>&1)
  local rc=$?
  echo "$output" | head -n 8
  echo "exit status $rc"
  echo "$output" | grep -q -e "CUDA_ERROR_ILLEGAL_\(ADDRESS\|INSTRUCTION\)" \
    -e "^$(basename "$1"): [0-9]* checks, [1-9][0-9]* failed$"
}
for program in "$here"/e2e-controls/*; do
  step "3. control: $(basename "$program") without the pass plugin fails" run_control "$program"
done
# The programs whose objects only the host builds, built without the frontend plugin: the device
# has no vtable of their classes, so the same must happen.
for program in "$here"/e2e-controls-frontend/*; do
  step "3. control: $(basename "$program") without the frontend plugin fails" run_control "$program"
done

run_array_bench() {
  OMP_TARGET_OFFLOAD=MANDATORY "$here/bench/virtual_arrays_gpu" > "$out/virtual_arrays_gpu.txt" 2>&1
  local rc=$?
  grep -vE '^[a-z0-9_]+,[0-9]+,[0-9.]+$' "$out/virtual_arrays_gpu.txt"
  [ $rc -eq 0 ] && grep -q "^virtual_arrays_gpu: [0-9]* checks, 0 failed$" "$out/virtual_arrays_gpu.txt"
}
if [ $bench -eq 1 ]; then
  step "bench" "$here/bin/gpu-test" bench --bundle "$here" --out "$out"
  step "bench: virtual calls over arrays of host-built objects" run_array_bench
fi

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ]; then
  step "4. memcheck: device lookup" "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
    "$here/bin/gpu-test" lookup --bundle "$here"
  step "4. memcheck: plugin C ABI" "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
    "$here/bin/gpu-test" plugin-abi --bundle "$here"
else
  skip "4. memcheck" "compute-sanitizer not found"
fi

echo "gpu bundle: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
