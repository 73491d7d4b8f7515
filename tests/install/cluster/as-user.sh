#!/usr/bin/env bash
# The cluster install test's user side (tests/checks/src/cluster_install.rs runs it): as an
# unprivileged user, with no network, in a mount namespace where Debian's /usr/lib/llvm-19 and
# /usr/lib/llvm-22 are empty and LLVM 22 is only at $LLVM (with its bin first on PATH and its lib
# on LD_LIBRARY_PATH, as `module load` sets them), it unpacks the vendored source tarball, installs
# for that LLVM into a prefix, and builds and runs tests/install/cluster/cluster.cpp from the
# prefix on the strict device: with --config, with CMake, and (the negative control) without the
# install, where it must stop. Then the same with EasyBuild: install/easybuild's recipe installs
# from the tarball, LLVM 22 an external module, and the program builds after `module load`. Last,
# the release archive (built elsewhere, with another prefix of LLVM 22) unpacked and used as is.
set -euo pipefail
: "${SCRATCH:?}" "${LLVM:?}" "${TARBALL:?}" "${SOURCE:?}" "${EASYBUILD:?}" "${LMOD:?}" "${ARCHIVE:?}"
export HOME=$SCRATCH/home CARGO_HOME=$SCRATCH/cargo-home
prefix=$SCRATCH/prefix
cd "$SCRATCH"
tar -xzf "$TARBALL"
cd "$SOURCE"
say() { printf '[as-user] %s\n' "$*"; }

started=$SECONDS
cargo xtask install --prefix "$prefix" --llvm "$LLVM" --sm sm_90 --gfx none
say "install built in $(($SECONDS - $started)) s"

program=$PWD/tests/install/cluster
strict=$prefix/lib/libomptarget-indirect-strict.so
offload=(-fopenmp -fopenmp-targets=x86_64-pc-linux-gnu)
run_strict() { env LD_PRELOAD="$strict" OMP_TARGET_OFFLOAD=MANDATORY "$@"; }

clang++ --config="$prefix/share/omptarget-indirect/clang-22.cfg" "${offload[@]}" -Wall -Werror \
  "$program/cluster.cpp" -o "$SCRATCH/cluster-config"
say "--config: $(run_strict "$SCRATCH/cluster-config")"

cmake -S "$program" -B "$SCRATCH/cmake-build" -DCMAKE_CXX_COMPILER="$LLVM/bin/clang++" \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$SCRATCH/cmake-build" >/dev/null
say "CMake: $(run_strict "$SCRATCH/cmake-build/cluster")"

clang++ "${offload[@]}" -DINLINE= "$program/cluster.cpp" -o "$SCRATCH/cluster-plain"
status=0
run_strict "$SCRATCH/cluster-plain" 2>"$SCRATCH/plain.err" || status=$?
if [ "$status" != 70 ]; then
  say "error: without the install the program exited $status, not 70 (a strict-device stop)"
  exit 1
fi
say "without the install: exit 70, $(head -c 60 "$SCRATCH/plain.err")..."

# EasyBuild, with Lmod: LLVM 22 as an external module, the recipe's source from --sourcepath.
modules=$SCRATCH/modules
mkdir -p "$modules/LLVM" "$SCRATCH/sources/o/omptarget-indirect"
printf 'prepend_path("PATH", "%s/bin")\nprepend_path("LD_LIBRARY_PATH", "%s/lib")\n' "$LLVM" "$LLVM" \
  >"$modules/LLVM/22.1.8.lua"
printf '[LLVM/22.1.8]\nname = LLVM\nversion = 22.1.8\nprefix = %s\n' "$LLVM" >"$SCRATCH/external-modules.cfg"
cp "$TARBALL" "$SCRATCH/sources/o/omptarget-indirect/"
recipe=$(ls "$PWD"/install/easybuild/omptarget-indirect-*-LLVM-22.1.8.eb)
started=$SECONDS
env PATH="$EASYBUILD/bin:$PATH" MODULEPATH="$modules" LMOD_CMD="$LMOD/libexec/lmod" \
  eb "$recipe" --prefix="$SCRATCH/easybuild" --sourcepath="$SCRATCH/sources" \
  --external-modules-metadata="$SCRATCH/external-modules.cfg" --try-amend=installopts="--sm sm_90 --gfx none" \
  >"$SCRATCH/eb.log" 2>&1 || { tail -n 30 "$SCRATCH/eb.log"; exit 1; }
say "EasyBuild installed $(basename "$recipe") in $(($SECONDS - $started)) s"
set +u
source "$LMOD/init/bash"
module use "$modules" "$SCRATCH/easybuild/modules/all"
module load omptarget-indirect
set -u
clang++ --config="$OMPTARGET_INDIRECT_CONFIG_DIR/clang-22.cfg" "${offload[@]}" -Wall -Werror \
  "$program/cluster.cpp" -o "$SCRATCH/cluster-module"
say "EasyBuild module, --config: $(env LD_PRELOAD="$OMPTARGET_INDIRECT_STRICT" \
  OMP_TARGET_OFFLOAD=MANDATORY "$SCRATCH/cluster-module")"
cmake -S "$program" -B "$SCRATCH/cmake-module" -DCMAKE_CXX_COMPILER="$LLVM/bin/clang++" >/dev/null
cmake --build "$SCRATCH/cmake-module" >/dev/null
say "EasyBuild module, CMake: $(env LD_PRELOAD="$OMPTARGET_INDIRECT_STRICT" \
  OMP_TARGET_OFFLOAD=MANDATORY "$SCRATCH/cmake-module/cluster")"
set +u
module purge
set -u

mkdir -p "$SCRATCH/unpacked"
tar -xzf "$ARCHIVE" -C "$SCRATCH/unpacked"
tree=$(ls -d "$SCRATCH"/unpacked/omptarget-indirect-*)
clang++ --config="$tree/share/omptarget-indirect/clang-22.cfg" "${offload[@]}" -Wall -Werror \
  "$program/cluster.cpp" -o "$SCRATCH/cluster-archive"
say "release archive, --config: $(env LD_PRELOAD="$tree/lib/libomptarget-indirect-strict.so" \
  OMP_TARGET_OFFLOAD=MANDATORY "$SCRATCH/cluster-archive")"
