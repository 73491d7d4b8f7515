# What every part of the GPU bundle does, sourced by each part's run.sh (gpu-tests/bundle/run.sh:
# LLVM 16's libomptarget and our CUDA plugin; run-stock.sh: a release's stock libomptarget).
# The caller sets `here` (the part's folder) and calls, in order:
#   parse_args "$@"                      --require-gpu, --bench, --out DIR
#   unpack_programs                      programs.tar.xz into the cache: `programs`, the folder
#                                        that holds e2e/, bench/ and the other program folders
#   use_runtime LIBOMPTARGET LIBRARY...  unpack debs/ into the cache, put the runtime on the path
#   or use_private_runtime LIBOMPTARGET  unpack runtime.tar.xz (the runtime with its own C library
#                                        and loader) into the cache; programs then run through
#                                        that loader (`launch`)
#   check_programs_load                  every program finds its libraries
#   probe_gpu                            exits here (0, or 1 with --require-gpu) without a GPU;
#                                        sets gpus and pageable_memory (0 or 1)
#   step NAME COMMAND... / skip NAME WHY
#   run_e2e_folder / run_control_folder  every program of a folder (run_e2e, run_control)
#   run_host_call_folder                 the calls into host code programs make on purpose
#   run_benches NAME, find_sanitizer, run_memcheck / run_memcheck_control
#   finish                               the summary line, steps.tsv and the exit status

parse_args() {
  require_gpu=0
  bench=0
  # Beside the part's folder, never in the working directory (a source tree) nor in the part.
  out=$here-results
  while [ $# -gt 0 ]; do
    case $1 in
      --require-gpu) require_gpu=1 ;;
      --bench) bench=1 ;;
      --out) out=$2; shift ;;
      *) echo "usage: $0 [--require-gpu] [--bench] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
  done
  mkdir -p "$out" || { echo "cannot create $out" >&2; exit 2; }
  out=$(cd "$out" && pwd)
  exec > >(tee "$out/run.log") 2>&1
  passed=0
  failed=0
  skipped=0
  # What runs a program of the part: nothing before it, or the carried loader
  # (use_private_runtime).
  launch=()
  part=$(basename "$here")
  : >"$out/steps.tsv"
}

# The part's executables travel packed (programs.tar.xz: ELF executables shrink about twenty
# times, which lets one call carry them all), unpacked once into the cache beside the runtime,
# keyed by the archive's checksum; `programs` is that folder.
unpack_programs() {
  local sum
  sum=$(cksum <"$here/programs.tar.xz" | cut -d' ' -f1) || exit 1
  programs=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/omptarget-indirect-gpu-bundle/programs-$sum
  if [ ! -e "$programs/.unpacked" ]; then
    rm -rf "$programs"
    mkdir -p "$programs" || exit 1
    if ! tar -xJf "$here/programs.tar.xz" -C "$programs" 2>/dev/null; then
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$here/programs.tar.xz" "$programs" || { echo "cannot unpack programs.tar.xz" >&2; exit 1; }
    fi
    : >"$programs/.unpacked"
  fi
  echo "programs: $(find "$programs" -type f -perm -u+x | wc -l) executables unpacked in $programs"
}

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

# The runtime the part's packages hold, unpacked once into a cache outside the bundle
# ($XDG_CACHE_HOME or ~/.cache, keyed by the packages' checksum; never into / and never into the
# bundle, which must stay small to travel). `lib/` links the libraries the programs load (paths in
# the unpacked tree, libomptarget first); `deps/` what they link that this system lacks (a carried
# library is used only where the system lacks its soname).
use_runtime() { # libomptarget library... (paths relative to the unpacked root)
  local libomptarget
  libomptarget=$(basename "$1")
  local debs_sum
  debs_sum=$(cat "$here"/debs/*.deb | cksum | cut -d' ' -f1)
  # Keyed by the packages and the libraries asked for.
  runtime=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/omptarget-indirect-gpu-bundle/$debs_sum-$(echo "$*" | cksum | cut -d' ' -f1)
  if [ ! -e "$runtime/lib/$libomptarget" ]; then
    rm -rf "$runtime"
    mkdir -p "$runtime/root" "$runtime/lib" "$runtime/deps" || exit 1
    for deb in "$here"/debs/*.deb; do
      unpack "$deb" "$runtime/root" || { echo "cannot unpack $deb" >&2; exit 1; }
    done
    local f soname
    for f in "$@"; do
      ln -s "$runtime/root/$f" "$runtime/lib/"
    done
    for f in "$runtime"/root/usr/lib/x86_64-linux-gnu/lib*.so.* "$runtime"/root/lib/x86_64-linux-gnu/lib*.so.*; do
      [ -e "$f" ] || continue
      soname=$(basename "$f")
      [ -e "$runtime/lib/$soname" ] && continue
      case $soname in *.so.*.*) continue ;; esac # sonames only (lib*.so.N)
      if ! ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$soname "; then
        ln -sf "$f" "$runtime/deps/$soname"
      fi
    done
  fi
  export LD_LIBRARY_PATH=$here/lib:$runtime/lib:$runtime/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if [ ! -e "$runtime/lib/$libomptarget" ] || ldd "$runtime/lib/$libomptarget" | grep -q "not found"; then
    echo "$libomptarget cannot be loaded here:" >&2
    ldd "$runtime/lib/$libomptarget" 2>&1 | grep "not found" >&2
    exit 1
  fi
  echo "runtime: $(ls "$runtime/lib" | tr '\n' ' ')(+ $(ls "$runtime/deps" | wc -l) libraries this system lacks)"
}

# A runtime carried with its own C library and loader (a release built for a newer C library
# than this machine may have: Debian sid's), unpacked once into the cache as use_runtime's. The
# programs run through that loader with the carried libraries first (`launch`); nothing is put
# on LD_LIBRARY_PATH, where this machine's own programs would load the carried C library. The
# driver's libcuda comes from the machine (its ld.so.cache, which the carried loader reads too).
use_private_runtime() { # libomptarget (its file name in runtime.tar.xz)
  local sum
  sum=$(cksum <"$here/runtime.tar.xz" | cut -d' ' -f1)
  runtime=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/omptarget-indirect-gpu-bundle/private-$sum
  if [ ! -e "$runtime/lib/$1" ]; then
    rm -rf "$runtime"
    mkdir -p "$runtime/lib" "$runtime/driver" || exit 1
    if ! tar -xJf "$here/runtime.tar.xz" -C "$runtime/lib" 2>/dev/null; then
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$here/runtime.tar.xz" "$runtime/lib" || { echo "cannot unpack runtime.tar.xz" >&2; exit 1; }
    fi
  fi
  mkdir -p "$runtime/driver"
  loader=$runtime/lib/ld-linux-x86-64.so.2
  library_path=$here/lib:$runtime/lib:$runtime/driver
  launch=("$loader" --library-path "$library_path")
  if "${launch[@]}" --list "$runtime/lib/$1" 2>&1 | grep -q "not found"; then
    echo "$1 cannot be loaded here:" >&2
    "${launch[@]}" --list "$runtime/lib/$1" 2>&1 | grep "not found" >&2
    exit 1
  fi
  echo "runtime: $(ls "$runtime/lib" | wc -l) libraries with their own loader ($(basename "$loader"))"
}

# The libraries `program` links, as `ldd` lists them: through the carried loader where there is one.
list_libraries() { # program
  if [ ${#launch[@]} -gt 0 ]; then
    "${launch[@]}" --list "$1" 2>&1
  else
    ldd "$1" 2>&1
  fi
}

# Every program of the part finds every library it links (here, before any GPU is asked for).
check_programs_load() {
  local program missing=0
  for program in "$programs"/*/*; do
    [ -x "$program" ] || continue
    if list_libraries "$program" | grep -q "not found"; then
      echo "$program cannot be loaded here:" >&2
      list_libraries "$program" | grep "not found" >&2
      missing=1
    fi
  done
  [ $missing -eq 0 ] || exit 1
}

probe_gpu() {
  local probe rc
  probe=$("$here/bin/gpu-test" probe)
  rc=$?
  if [ $rc -eq 3 ]; then
    printf '%s\t%s\tskipped\t%s\n' "$part" "every step" "no NVIDIA GPU" >>"$out/steps.tsv"
    echo "no NVIDIA GPU: built, not run"
    exit $require_gpu
  fi
  if [ $rc -ne 0 ]; then
    echo "gpu-test probe failed ($rc): $probe" >&2
    exit 1
  fi
  echo "$probe"
  gpus=${probe%% *}
  case $probe in
    *"pageable memory access: yes"*) pageable_memory=1 ;;
    *) pageable_memory=0 ;;
  esac
  if [ -z "$gpus" ] || [ "$gpus" -lt 1 ] 2>/dev/null; then
    echo "gpu-test probe found no device although it did not say so: $probe" >&2
    exit 1
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi >"$out/nvidia-smi.txt" 2>&1
}

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

skip() { # name why
  echo "== $1"
  echo "-- skipped: $1: $2"
  skipped=$((skipped + 1))
}

# An end-to-end program passes: it exits 0 and prints `<name>: N checks, 0 failed`.
run_e2e() { # program
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY ${launch[@]+"${launch[@]}"} "$1" 2>&1)
  local rc=$?
  echo "$output" | tail -n 3
  [ $rc -eq 0 ] && echo "$output" | grep -q "^$(basename "$1"): [0-9]* checks, 0 failed$"
}

# A negative control fails for the right reason: the GPU faults (each part says how its plugin
# reports that, in `fault_pattern`, a grep -e list) or its checks fail; passing, or failing
# otherwise, fails.
run_control() { # program [argument...]
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY timeout 120 ${launch[@]+"${launch[@]}"} "$@" 2>&1)
  local rc=$?
  echo "$output" | head -n 8
  echo "exit status $rc"
  local patterns=() p
  for p in "${fault_pattern[@]}"; do patterns+=(-e "$p"); done
  echo "$output" | grep -q "${patterns[@]}" -e "^$(basename "$1"): [0-9]* checks, [1-9][0-9]* failed$"
}

# Every program of a folder as a step; `devices` only with 2 GPUs.
run_e2e_folder() { # step-prefix folder
  local program name
  for program in "$2"/*; do
    # Executables only (a list of controls lies beside them too).
    [ -x "$program" ] || continue
    name=$(basename "$program")
    # A program's shared library lies beside it (its rpath is $ORIGIN).
    case $name in *.so) continue ;; esac
    if [ "$name" = devices ] && [ "$gpus" -lt 2 ]; then
      skip "$1 $name" "needs 2 GPUs, this machine has $gpus"
      continue
    fi
    step "$1 $name" run_e2e "$program"
  done
}

# A call into host code a program makes on purpose (its argument) stops it, non-zero, with the
# check's one line naming what was called and its object, instead of a bare fault.
run_host_call_stop() { # program argument called object
  local output
  output=$(OMP_TARGET_OFFLOAD=MANDATORY timeout 120 ${launch[@]+"${launch[@]}"} "$1" "$2" 2>&1)
  local rc=$?
  echo "$output" | head -n 8
  echo "exit status $rc"
  [ $rc -ne 0 ] && echo "$output" | grep -F "device code called $3 at 0x" | grep -qF -e "/$4 from" -e "/$4, which"
}

# Every call into host code the programs of a folder make on purpose (`<program>.host-calls`:
# argument, what is called, its object; tab-separated), as a step each.
run_host_call_folder() { # step-prefix folder
  local list program argument called object
  for list in "$2"/*.host-calls; do
    [ -f "$list" ] || continue
    program=${list%.host-calls}
    while IFS=$'\t' read -r -u 3 argument called object; do
      step "$1 $(basename "$program") $argument stops with its report" \
        run_host_call_stop "$program" "$argument" "$called" "$object"
    done 3< "$list"
  done
}

run_control_folder() { # step-prefix folder what-it-lacks
  local program
  for program in "$2"/*; do
    [ -x "$program" ] || continue
    case $program in *.so) continue ;; esac
    step "$1: $(basename "$program") without $3 fails" run_control "$program"
  done
}

# The virtual calls over arrays of host-built objects (run.sh --bench): every result checked, the
# timings in virtual_arrays_gpu.txt.
run_array_bench() {
  OMP_TARGET_OFFLOAD=MANDATORY ${launch[@]+"${launch[@]}"} "$programs/bench/virtual_arrays_gpu" \
    > "$out/virtual_arrays_gpu.txt" 2>&1
  local rc=$?
  grep -vE '^[a-z0-9_]+,[0-9]+,[0-9.]+$' "$out/virtual_arrays_gpu.txt"
  [ $rc -eq 0 ] && grep -q "^virtual_arrays_gpu: [0-9]* checks, 0 failed$" "$out/virtual_arrays_gpu.txt"
}

# With --bench: the translation benchmark (ours against the LLVM lookup in kernels/) and the
# array benchmark, as two steps.
run_benches() { # name-of-the-translation-step
  [ $bench -eq 1 ] || return 0
  step "$1" "$here/bin/gpu-test" bench --bundle "$here" --out "$out"
  step "bench: virtual calls over arrays of host-built objects" run_array_bench
}

# A program under compute-sanitizer's memcheck passes: it exits 0, prints `<name>: N checks, 0
# failed`, and memcheck's error summary counts only the errors the caller allows by name
# (`known_api_error`: the header line of a CUDA API error and a host frame every such report must
# hold, e.g. the stock runtime's own call). Any other API error, any invalid access, a leak, or no
# summary at all fails it. The memory manager is off (LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0):
# each allocation is the driver's own, so memcheck sees an access past its end.
run_memcheck() { # sanitizer program
  local log=$out/memcheck-$(basename "$2").txt
  OMP_TARGET_OFFLOAD=MANDATORY LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0 timeout 600 \
    "$1" --tool memcheck --leak-check full ${launch[@]+"${launch[@]}"} "$2" > "$log" 2>&1
  local rc=$?
  grep -v '^=========         Host Frame:' "$log" | head -n 40
  local counts
  counts=$(awk -v header="${known_api_error[0]:-}" -v frame="${known_api_error[1]:-}" '
    function close_report() { if (in_report && is_known && has_frame) known++; in_report = 0 }
    /^========= ERROR SUMMARY: / { close_report(); total = $4; summary = 1; next }
    /^========= [^ ]/ { close_report(); in_report = 1; is_known = header != "" && index($0, header) == 1 + length("========= "); has_frame = 0; next }
    /^=========  / { if (in_report && frame != "" && index($0, frame)) has_frame = 1; next }
    { close_report() }
    END { close_report(); print (summary ? total : "none"), known + 0 }' "$log")
  local total=${counts% *} known=${counts#* }
  echo "exit status $rc; memcheck: $total errors, $known of them the allowed ${known_api_error[0]:+\"${known_api_error[0]}\"}"
  [ $rc -eq 0 ] && [ "$total" != none ] && [ "$total" -eq "$known" ] &&
    grep -q "^$(basename "$2"): [0-9]* checks, 0 failed$" "$log"
}

# The memcheck step's negative control: run_memcheck must fail on `program`, a deliberate access
# past the end of an allocation that faults nowhere else, and memcheck must name the access.
run_memcheck_control() { # sanitizer program
  if run_memcheck "$@"; then
    echo "memcheck passed a program that writes past the end of an allocation"
    return 1
  fi
  grep -q "Invalid __global__ write of size 4" "$out/memcheck-$(basename "$2").txt"
}

# compute-sanitizer's path, or nothing where the machine lacks it.
find_sanitizer() {
  command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true
}

# The summary line; steps.tsv (part, step, passed/FAILED/skipped, why) is what report.sh makes
# the table of every part's run from.
finish() {
  echo "gpu bundle: $passed passed, $failed failed, $skipped skipped"
  [ $failed -eq 0 ]
}
