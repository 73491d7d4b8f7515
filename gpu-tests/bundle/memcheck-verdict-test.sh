#!/usr/bin/env bash
# Checks common.sh's memcheck verdict (run_memcheck, run_memcheck_control) without a GPU, on
# reports shaped as compute-sanitizer 2024-2025 prints them: a stand-in sanitizer prints a report
# and the program's summary line. The allowed error passes only with its host frame; an invalid
# access, another API error, a missing summary or a failed check fails; the control passes only
# where memcheck names the write. Run by `cargo xtask gpu-test` when it builds the bundle.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$work
. "$(dirname "$0")/common.sh"
out=$work/out
mkdir -p "$out"
known_api_error=('Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuFuncGetParamInfo.'
  '__tgt_target_kernel [')

api_error() { # frame-of-the-launch
  cat <<REPORT
========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuFuncGetParamInfo.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame:  [0xc7ef8] in libomptarget.so.22.1
=========         Host Frame: $1 [0x4c887] in libomptarget.so.22.1
=========         Host Frame: main [0x25dd] in program
========= 
REPORT
}
invalid_write() {
  cat <<'REPORT'
========= Invalid __global__ write of size 4 bytes
=========     at __omp_offloading_fd00_1_main_l17+0x90
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f1e2a000100 is out of bounds
========= 
REPORT
}

# sanitizer-stand-in name exit-status checks-line report-part...
stand_in() {
  local script=$work/$1
  shift
  {
    echo '#!/bin/sh'
    echo 'cat <<"END"'
    echo '========= COMPUTE-SANITIZER'
    local status=$1 checks=$2
    shift 2
    local part
    for part in "$@"; do printf '%s\n' "$part"; done
    echo "$checks"
    echo 'END'
    echo "exit $status"
  } > "$script"
  chmod +x "$script"
  echo "$script"
}

failures=0
expect() { # verdict description command...
  local want=$1 what=$2
  shift 2
  "$@" > "$work/log" 2>&1
  local got=$?
  if { [ "$want" = pass ] && [ $got -ne 0 ]; } || { [ "$want" = fail ] && [ $got -eq 0 ]; }; then
    echo "memcheck verdict: $what: expected $want, got exit status $got"
    cat "$work/log"
    failures=$((failures + 1))
  fi
}

known=$(api_error __tgt_target_kernel)
other=$(api_error __tgt_target_data_begin_mapper)
write=$(invalid_write)
ok='program: 5 checks, 0 failed'
expect pass "two allowed errors" run_memcheck \
  "$(stand_in s1 0 "$ok" "$known" "$known" '========= ERROR SUMMARY: 2 errors')" "$work/program"
expect pass "no error" run_memcheck "$(stand_in s2 0 "$ok" '========= ERROR SUMMARY: 0 errors')" "$work/program"
expect fail "the allowed error from another call site" run_memcheck \
  "$(stand_in s3 0 "$ok" "$other" '========= ERROR SUMMARY: 1 error')" "$work/program"
expect fail "an invalid write beside allowed errors" run_memcheck \
  "$(stand_in s4 0 "$ok" "$known" "$write" '========= ERROR SUMMARY: 2 errors')" "$work/program"
expect fail "no error summary" run_memcheck "$(stand_in s5 0 "$ok" "$known")" "$work/program"
expect fail "a failed check" run_memcheck \
  "$(stand_in s6 1 'program: 5 checks, 1 failed' '========= ERROR SUMMARY: 0 errors')" "$work/program"
expect pass "the control, memcheck naming the write" run_memcheck_control \
  "$(stand_in s7 0 "$ok" "$known" "$write" '========= ERROR SUMMARY: 2 errors')" "$work/program"
expect fail "the control, memcheck silent" run_memcheck_control \
  "$(stand_in s8 0 "$ok" '========= ERROR SUMMARY: 0 errors')" "$work/program"
echo "memcheck verdict: 8 cases, $failures failed"
[ $failures -eq 0 ]
