#!/usr/bin/env bash
# The Spack install check (tests/checks/src/spack_install.rs runs it in a network namespace of its
# own): installs install/spack/'s package with a real Spack, offline, as a site would, then uses
# it as a cluster user would. Prints "[spack] ..." lines for the report; exits non-zero on the
# first failure.
#
#   1. Spack configured in scratch directories only: the builtin repository unpacked, no mirror,
#      no bootstrapping, externals for this machine's gcc, cmake, make, the pinned Rust nightly
#      and the LLVM at $LLVM (and Debian's oldest supported LLVM, concretized only);
#   2. a site repository whose package derives from the project's and adds the release tarball's
#      version with its sha256 (what a site does for a release it mirrors);
#   3. `spack install` of that version, `spack test run`, `spack load`, then the cluster program
#      through --config and through CMake's find_package on the strict device; the same with the
#      pass plugin taken away must fail (the negative control);
#   4. `spack dev-build` of a clone of the checkout (as version develop), its tests;
#   5. `spack uninstall` of both, and nothing of them left in the install tree.
set -euo pipefail
: "${SCRATCH:?}" "${SPACK:?}" "${SPACK_PYTHON:?}" "${BUILTIN:?}" "${PACKAGES:?}" "${LLVM:?}"
: "${LLVM_VERSION:?}" "${OLDEST_LLVM:?}" "${OLDEST_LLVM_VERSION:?}" "${RUST:?}" "${TARBALL:?}" "${CHECKOUT:?}" "${PROGRAM:?}"

say() { printf '[spack] %s\n' "$*"; }
spack() { "$SPACK_PYTHON" "$SPACK/bin/spack" "$@"; }
export SPACK_USER_CONFIG_PATH=$SCRATCH/config SPACK_SYSTEM_CONFIG_PATH=$SCRATCH/system-config
export SPACK_USER_CACHE_PATH=$SCRATCH/cache
# cargo's crates for the checkout's build: the machine's cache (the tarball vendors its own).
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$SCRATCH/home
mkdir -p "$SPACK_USER_CONFIG_PATH" "$SPACK_SYSTEM_CONFIG_PATH" "$SPACK_USER_CACHE_PATH" "$HOME"

version=$(basename "$TARBALL")
version=${version#omptarget-indirect-}
version=${version%-src.tar.gz}
sha256=$(sha256sum "$TARBALL" | cut -d' ' -f1)
major=${LLVM_VERSION%%.*}

# --- 1. configuration ---------------------------------------------------------------------------
site=$SCRATCH/site/spack_repo/site
mkdir -p "$site/packages/omptarget_indirect"
printf 'repo:\n  namespace: site\n  api: v2.2\n' >"$site/repo.yaml"
cat >"$site/packages/omptarget_indirect/package.py" <<PY
from spack_repo.omptarget_indirect.packages.omptarget_indirect.package import (
    OmptargetIndirect as ProjectPackage,
)

from spack.package import *


class OmptargetIndirect(ProjectPackage):
    """The project's package with the release this site mirrors."""

    version("$version", sha256="$sha256", url="file://$TARBALL")
PY
cat >"$SPACK_USER_CONFIG_PATH/repos.yaml" <<YAML
repos::
  site: $site
  omptarget_indirect: $PACKAGES
  builtin: $BUILTIN
YAML
printf 'mirrors:: {}\n' >"$SPACK_USER_CONFIG_PATH/mirrors.yaml"
printf 'bootstrap:\n  enable: false\n' >"$SPACK_USER_CONFIG_PATH/bootstrap.yaml"
cat >"$SPACK_USER_CONFIG_PATH/config.yaml" <<YAML
config:
  install_tree:
    root: $SCRATCH/opt
  build_stage: [$SCRATCH/stage]
  test_stage: $SCRATCH/test-stage
  source_cache: $SCRATCH/source-cache
  misc_cache: $SCRATCH/misc-cache
  build_jobs: 2
YAML
gcc_version=$(gcc -dumpfullversion)
cmake_version=$(cmake --version | head -n1 | cut -d' ' -f3)
make_version=$(make --version | head -n1 | cut -d' ' -f3)
cat >"$SPACK_USER_CONFIG_PATH/packages.yaml" <<YAML
packages:
  all:
    providers:
      c: [gcc]
      cxx: [gcc]
  gcc:
    buildable: false
    externals:
    - spec: gcc@$gcc_version languages=c,c++
      prefix: /usr
      extra_attributes:
        compilers: {c: /usr/bin/gcc, cxx: /usr/bin/g++}
  llvm:
    buildable: false
    externals:
    - spec: llvm@$LLVM_VERSION +clang +flang +lld +llvm_dylib +link_llvm_dylib
      prefix: $LLVM
    - spec: llvm@$OLDEST_LLVM_VERSION +clang ~flang +lld +llvm_dylib +link_llvm_dylib
      prefix: $OLDEST_LLVM
  cmake:
    buildable: false
    externals: [{spec: cmake@$cmake_version, prefix: /usr}]
  gmake:
    buildable: false
    externals: [{spec: gmake@$make_version, prefix: /usr}]
  rust:
    buildable: false
    externals: [{spec: rust@nightly +src, prefix: $RUST}]
YAML
say "Spack $(spack --version) configured offline: externals gcc@$gcc_version, llvm@$LLVM_VERSION, llvm@$OLDEST_LLVM_VERSION, cmake@$cmake_version, gmake@$make_version, rust@nightly"

# --- 2. the package and its spec ----------------------------------------------------------------
spack audit packages omptarget-indirect >"$SCRATCH/audit.log" 2>&1 || { cat "$SCRATCH/audit.log"; exit 1; }
say "spack audit packages omptarget-indirect: $(grep -c ": passed" "$SCRATCH/audit.log") groups of checks passed"
spack spec -I "omptarget-indirect@$version ^llvm@$LLVM_VERSION" >"$SCRATCH/spec.txt"
spack spec -I "omptarget-indirect@$version ^llvm@$OLDEST_LLVM_VERSION" >"$SCRATCH/spec-oldest.txt"
grep -q 'omptarget-indirect@.*~fortran' "$SCRATCH/spec-oldest.txt" \
  || { cat "$SCRATCH/spec-oldest.txt"; say "error: with LLVM $OLDEST_LLVM_VERSION the spec is not ~fortran"; exit 1; }
# Without an external: the builtin llvm package, which links its tools statically by default.
mkdir -p "$SCRATCH/builtin-llvm"
printf 'packages:\n  llvm::\n    buildable: true\n' >"$SCRATCH/builtin-llvm/packages.yaml"
spack -C "$SCRATCH/builtin-llvm" spec -I "omptarget-indirect@$version ~fortran ^llvm@21" >"$SCRATCH/spec-builtin.txt"
builtin_llvm=$(grep -o '\^llvm@[^ ]*[^^]*' "$SCRATCH/spec-builtin.txt" | head -n1 | tr -s ' ')
case "$builtin_llvm" in
  *+link_llvm_dylib*) ;;
  *) cat "$SCRATCH/spec-builtin.txt"; say "error: against the builtin llvm the spec is $builtin_llvm"; exit 1 ;;
esac
grep -q '\[e\].*\^llvm@' "$SCRATCH/spec-builtin.txt" && { say "error: the builtin spec took an external llvm"; exit 1; }
say "concretized: with llvm@$LLVM_VERSION $(grep -o 'omptarget-indirect@[^ ]*[^^]*' "$SCRATCH/spec.txt" | head -n1 | tr -s ' '); with llvm@$OLDEST_LLVM_VERSION ~fortran (its flang has no indirect); against the builtin llvm package (no external): $(echo "$builtin_llvm" | grep -o 'llvm@[0-9.]*') $(echo "$builtin_llvm" | grep -o -e '+llvm_dylib' -e '+link_llvm_dylib' | tr '\n' ' ')"

# --- 3. install from the release tarball, test, load, use -------------------------------------------
started=$SECONDS
spack install --fail-fast "omptarget-indirect@$version ^llvm@$LLVM_VERSION" >"$SCRATCH/install.log" 2>&1 \
  || { tail -n 40 "$SCRATCH/install.log"; exit 1; }
say "spack install omptarget-indirect@$version ^llvm@$LLVM_VERSION (the release tarball, sha256 checked): $(($SECONDS - started)) s"
# Runs the package's stand-alone tests of spec $1 under the alias $2; prints the passed ones.
tests_of() {
  spack test run --alias "$2" "$1" >"$SCRATCH/test-$2.log" 2>&1 || { cat "$SCRATCH/test-$2.log"; exit 1; }
  local passed
  passed=$(cat "$SCRATCH"/test-stage/*/*-test-out.txt | grep -c '^PASSED: OmptargetIndirect::' || true)
  rm -rf "$SCRATCH"/test-stage/*
  [ "$passed" -gt 0 ] || { cat "$SCRATCH/test-$2.log"; say "error: no test of the package passed"; exit 1; }
  echo "$passed"
}
say "spack test run: $(tests_of "omptarget-indirect@$version" release) passed (C++ and Fortran on the strict device)"

offload=(-fopenmp -fopenmp-targets=x86_64-pc-linux-gnu)
# Builds the cluster program with --config and with CMake in the loaded environment and runs both
# on the strict device; prints their lines.
use_loaded() {
  local out=$SCRATCH/use-$1
  rm -rf "$out" && mkdir -p "$out"
  clang++ --config="$OMPTARGET_INDIRECT_CONFIG_DIR/clang-$major.cfg" "${offload[@]}" -Wall -Werror \
    "$PROGRAM/cluster.cpp" -o "$out/cluster-config"
  LD_PRELOAD=$OMPTARGET_INDIRECT_STRICT OMP_TARGET_OFFLOAD=MANDATORY "$out/cluster-config"
  cmake -S "$PROGRAM" -B "$out/cmake" -DCMAKE_CXX_COMPILER="$(command -v clang++)" >/dev/null
  cmake --build "$out/cmake" >/dev/null
  LD_PRELOAD=$OMPTARGET_INDIRECT_STRICT OMP_TARGET_OFFLOAD=MANDATORY "$out/cmake/cluster"
}
(
  eval "$(spack load --sh "omptarget-indirect@$version")"
  [ "$(command -v clang++)" = "$LLVM/bin/clang++" ] || { say "error: spack load put $(command -v clang++) first"; exit 1; }
  lines=$(use_loaded release)
  say "spack load: --config and find_package on the strict device: $(echo "$lines" | tr '\n' ';')"
  prefix=$(spack location -i "omptarget-indirect@$version")
  plugin=$(ls "$prefix"/lib/libomptarget-indirect-pass-llvm"$major".so)
  mv "$plugin" "$plugin.away"
  if use_loaded control >"$SCRATCH/control.log" 2>&1; then
    mv "$plugin.away" "$plugin"
    say "error: without the pass plugin the program still built and ran: $(cat "$SCRATCH/control.log")"
    exit 1
  fi
  mv "$plugin.away" "$plugin"
  say "negative control: without the installed pass plugin it fails: $(grep -m1 -E 'error|FAILED|omptarget' "$SCRATCH/control.log" | cut -c1-100)"
)

# --- 4. a checkout through spack dev-build --------------------------------------------------------
git clone -q "$CHECKOUT" "$SCRATCH/checkout"
started=$SECONDS
spack dev-build -q -d "$SCRATCH/checkout" "omptarget-indirect@=develop ^llvm@$LLVM_VERSION" >"$SCRATCH/dev-build.log" 2>&1 \
  || { tail -n 40 "$SCRATCH/dev-build.log"; exit 1; }
passed=$(tests_of "omptarget-indirect@develop" develop)
say "spack dev-build of a clone of the checkout (@develop): $(($SECONDS - started)) s, $passed test passed"

# --- 5. uninstall ---------------------------------------------------------------------------------
spack uninstall -y "omptarget-indirect@$version" "omptarget-indirect@develop" >/dev/null
left=$(find "$SCRATCH/opt" -name '*omptarget-indirect*' -print -quit)
[ -z "$left" ] || { say "error: left after spack uninstall: $left"; exit 1; }
[ -z "$(spack find --format '{name}' omptarget-indirect 2>/dev/null)" ] || { say "error: spack still lists it"; exit 1; }
say "spack uninstall: nothing of either install left under the install tree"
