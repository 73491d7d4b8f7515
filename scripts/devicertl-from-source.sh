#!/usr/bin/env bash
# Builds LLVM N's GPU device runtime (DeviceRTL: libomptarget-{nvptx,amdgpu}.bc and
# libompdevice.a), which Debian's LLVM 21, 22 and 23 do not ship, from LLVM's own source as
# Debian distributes it, with that release's clang:
#   target/tools/llvmN-devicertl/lib/nvptx64-nvidia-cuda/{libomptarget-nvptx.bc,libompdevice.a}
#   target/tools/llvmN-devicertl/lib/amdgcn-amd-amdhsa/{libomptarget-amdgpu.bc,libompdevice.a}
# clang finds them with --libomptarget-{nvptx,amdgpu}-bc-path=DIR and -Xoffload-linker -LDIR
# (docs/gpu-devicertl.md). Usage: scripts/devicertl-from-source.sh 21|22|23
# (scripts/fetch-llvmN-devicertl.sh call it). DEVICERTL_SOURCE_ONLY=1 only fetches the source
# tarball and prints its path (scripts/fetch-llvm23-offload-tests.sh).
#
# The source: the upstream tarball of Debian's source package llvm-toolchain-N, from the main
# archive of the Debian mirror apt is configured with (the security archive serves no source
# files), checked against its sha256 and kept (see the cache below). Only the directories the
# runtime is built from are unpacked. No root is needed.
#   22: 22.1.8, built with Debian 12's clang-22 (/usr/lib/llvm-22/bin): the same release.
#   21: 21.1.8, built with sid's clang-21 (target/tools/sid-llvm21/bin): the same release. Its
#       DeviceRTL is offload/DeviceRTL, which LLVM 21 builds only inside the whole offload project
#       (libomptarget and its plugins, against LLVM's CMake package): this script runs the
#       compiles its CMakeLists.txt describes (the flags below are that file's) and no CMake.
#   23: 23.1.1 with sid's clang-23 23.1.4: sid's index lists the 23.1.4 tarball but the archive
#       does not serve it; a DeviceRTL of the same release branch (bug fixes between them, one
#       ABI) stands in, and target/tools/llvm23-devicertl/SOURCE says so.
#
# The source tarball and the built runtime are kept once per machine in the cache directory
# ($OMPTARGET_INDIRECT_CACHE, else $XDG_CACHE_HOME/omptarget-indirect, else
# ~/.cache/omptarget-indirect; target/tools/llvmN-devicertl links to the runtime there), or in
# target/tools where no cache directory can be written.
#
# Another LLVM (a cluster's module, a distribution's clang without its GPU runtime):
#   LLVMN_BIN=<its bin directory> DEVICERTL_DEST=<where to put lib/> scripts/devicertl-from-source.sh N
# Its major version must be N; LLVMN_SOURCE=<tarball> uses a tarball already at hand (same
# checksum) instead of downloading.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
major=${1:-}
case "$major" in
  21) version=21.1.8; sha256=d983d6b6ffce1d413a1910a9fd00f794bb99a5ae4c4e7d23d18a99254640f4eb
      default_bin=$tools/sid-llvm21/bin; layout=offload ;;
  22) version=22.1.8; sha256=b49b9277aef97616320b2da259e1f8174c65b0ce2fbe2e8629644a97693402fe
      default_bin=/usr/lib/llvm-22/bin; layout=openmp ;;
  23) version=23.1.1; sha256=0a5838b993f406534db7e6dc7df66e295354a1e9a23bb21e5739cf5df5bc7689
      default_bin=$tools/sid-llvm23/bin; layout=openmp ;;
  *) printf '[devicertl-from-source] error: usage: %s 21|22|23\n' "$0" >&2; exit 2 ;;
esac
orig=llvm-toolchain-${major}_$version.orig.tar.xz
bin_var=LLVM${major}_BIN
source_var=LLVM${major}_SOURCE
bin=${!bin_var:-$default_bin}
given_source=${!source_var:-}
dest=${DEVICERTL_DEST:-$tools/llvm$major-devicertl}
cache=${OMPTARGET_INDIRECT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/omptarget-indirect}
if ! { mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; }; then
  cache=
fi
src_dir=${cache:-$tools}/src
triples=(nvptx64-nvidia-cuda amdgcn-amd-amdhsa)
names=(nvptx amdgpu)

say() { printf '[devicertl-from-source %s] %s\n' "$major" "$*" >&2; }
fail() { say "error: $*"; exit 1; }

# The mirror: the first URIs/deb line of apt's configuration that serves the main archive
# (not the security one, whose pool has no source files).
uris='/^URIs:/ { for (i = 2; i <= NF; i++) print $i } /^deb[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { print $i; break } }'
mirror() {
  local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list)
  for file in "${files[@]}"; do
    if [ -f "$file" ]; then awk "$uris" "$file"; fi
  done | grep -v -e security -e '^cdrom:' | head -n1
}

# The tarball: the one given, the cache's, or downloaded and checked.
ensure_tarball() {
  tarball=${given_source:-$src_dir/$orig}
  if [ ! -f "$tarball" ] || [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$sha256" ]; then
    [ -z "$given_source" ] || fail "$given_source is not $orig (sha256 $sha256)"
    base=$(mirror)
    [ -n "$base" ] || fail "no Debian mirror in apt's configuration (/etc/apt/sources.list*): \
set $source_var to a copy of $orig"
    mkdir -p "$src_dir"
    url=${base%/}/pool/main/l/llvm-toolchain-$major/$orig
    say "downloading $orig (about 200 MB) from the main archive of $base"
    curl -sSfL --retry 3 -o "$tarball.part" "$url" || fail "cannot download $url"
    got=$(sha256sum "$tarball.part" | cut -d' ' -f1)
    [ "$got" = "$sha256" ] || { rm -f "$tarball.part"; fail "$url has sha256 $got, not $sha256"; }
    mv "$tarball.part" "$tarball"
  fi
}

# DEVICERTL_SOURCE_ONLY=1: only the source tarball, its path on stdout (for LLVM's own tests).
if [ "${DEVICERTL_SOURCE_ONLY:-}" = 1 ]; then
  ensure_tarball
  printf '%s\n' "$tarball"
  exit 0
fi

built=1
for i in 0 1; do
  [ -f "$dest/lib/${triples[$i]}/libomptarget-${names[$i]}.bc" ] && [ -f "$dest/lib/${triples[$i]}/libompdevice.a" ] || built=0
done
[ "$built" = 1 ] && exit 0
if [ -z "${DEVICERTL_DEST:-}" ] && [ -n "$cache" ]; then
  # The machine's copy, built once; target/tools/llvmN-devicertl links to it.
  shared=$cache/llvm$major-devicertl-$version
  if [ -f "$shared/SOURCE" ]; then
    rm -rf "$dest"
    mkdir -p "$(dirname "$dest")"
    ln -sfn "$shared" "$dest"
    exit 0
  fi
  link_to=$dest
  dest=$shared.part
  rm -rf "$dest"
fi

for tool in clang clang++ llvm-ar llvm-ranlib llvm-nm ld.lld llvm-config; do
  [ -x "$bin/$tool" ] || fail "$bin/$tool is missing (Debian: clang-$major, llvm-$major, lld-$major)"
done
have=$("$bin/llvm-config" --version)
[ "${have%%.*}" = "$major" ] || fail "$bin holds LLVM $have, this script builds the runtime of LLVM $major"
[ "$have" = "$version" ] || say "note: the source is $version, the compiler $have (same release branch)"

ensure_tarball

work=$(mktemp -d "${TMPDIR:-/tmp}/llvm$major-devicertl.XXXXXX")
trap 'rm -rf "$work"' EXIT
top=llvm-toolchain-${major}_$version

# LLVM 22+: openmp/device, a runtime of its own (it includes offload/include and libc/shared;
# runtimes/, cmake/ and llvm/cmake drive the standalone build).
build_openmp_device() {
  local triple=$1 name=$2 build=$work/build-$1
  cmake -S "$work/$top/runtimes" -B "$build" -G "Unix Makefiles" \
    -DLLVM_ENABLE_RUNTIMES=openmp -DLLVM_DEFAULT_TARGET_TRIPLE="$triple" \
    -DCMAKE_C_COMPILER="$bin/clang" -DCMAKE_CXX_COMPILER="$bin/clang++" -DCMAKE_ASM_COMPILER="$bin/clang" \
    -DCMAKE_C_COMPILER_TARGET="$triple" -DCMAKE_CXX_COMPILER_TARGET="$triple" \
    -DCMAKE_ASM_COMPILER_TARGET="$triple" \
    -DCMAKE_C_COMPILER_WORKS=ON -DCMAKE_CXX_COMPILER_WORKS=ON -DCMAKE_ASM_COMPILER_WORKS=ON \
    -DCMAKE_AR="$bin/llvm-ar" -DCMAKE_RANLIB="$bin/llvm-ranlib" -DCMAKE_NM="$bin/llvm-nm" \
    -DCMAKE_LINKER="$bin/ld.lld" \
    -DLLVM_ENABLE_PER_TARGET_RUNTIME_DIR=ON -DLLVM_INCLUDE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
    >"$work/cmake-$triple.log" 2>&1 || { tail -n 20 "$work/cmake-$triple.log" >&2; fail "cmake for $triple"; }
  # PATH: clang runs ld.lld (amdgcn) by name.
  PATH="$bin:$PATH" cmake --build "$build" -j "$(nproc)" >"$work/build-$triple.log" 2>&1 \
    || { tail -n 20 "$work/build-$triple.log" >&2; fail "building the DeviceRTL for $triple"; }
  cp "$build/lib/$triple/libomptarget-$name.bc" "$build/lib/$triple/libompdevice.a" "$dest/lib/$triple/"
}

# LLVM 21: offload/DeviceRTL, compiled as its CMakeLists.txt says (compileDeviceRTLLibrary):
# each source to LTO bitcode, one relocatable LTO link to libomptarget-<name>.bc, and
# libompdevice.a holding that bitcode.
build_offload_devicertl() {
  local triple=$1 name=$2 build=$work/build-$1 rtl=$work/$top/offload/DeviceRTL
  local target_flags=(--cuda-feature=+ptx63)
  if [ "$name" = amdgpu ]; then
    target_flags=(-Xclang -mcode-object-version=none)
  fi
  mkdir -p "$build"
  local objects=() src
  for src in "$rtl"/src/*.cpp; do
    local object=$build/$(basename "$src").o
    "$bin/clang" -c -flto -std=c++17 -fvisibility=hidden -O3 -mllvm -openmp-opt-disable \
      -DSHARED_SCRATCHPAD_SIZE=512 -mllvm -vectorize-slp=false -nogpulib -nostdlibinc \
      -fno-rtti -fno-exceptions -fconvergent-functions -Wno-unknown-cuda-version \
      -DOMPTARGET_DEVICE_RUNTIME -I"$rtl/include" -I"$rtl/../include" -I"$rtl/../../libc" \
      --target="$triple" "${target_flags[@]}" "$src" -o "$object" >>"$work/build-$triple.log" 2>&1 \
      || { tail -n 20 "$work/build-$triple.log" >&2; fail "compiling $(basename "$src") for $triple"; }
    objects+=("$object")
  done
  PATH="$bin:$PATH" "$bin/clang++" --target="$triple" -r -nostdlib -flto -Wl,--lto-emit-llvm \
    -fuse-ld=lld -march= -mcpu= -Wno-unused-command-line-argument "${objects[@]}" \
    -o "$build/libomptarget-$name.bc" >>"$work/build-$triple.log" 2>&1 \
    || { tail -n 20 "$work/build-$triple.log" >&2; fail "linking libomptarget-$name.bc"; }
  rm -f "$build/libompdevice.a"
  "$bin/llvm-ar" -rcs "$build/libompdevice.a" "$build/libomptarget-$name.bc"
  cp "$build/libomptarget-$name.bc" "$build/libompdevice.a" "$dest/lib/$triple/"
}

parts=("$top/runtimes" "$top/cmake" "$top/llvm/cmake" "$top/openmp" "$top/offload/include" "$top/libc/shared")
if [ "$layout" = offload ]; then
  parts=("$top/offload/DeviceRTL" "$top/offload/include" "$top/libc/shared")
fi
tar -xJf "$tarball" -C "$work" "${parts[@]}"

for i in 0 1; do
  say "building the DeviceRTL for ${triples[$i]}"
  mkdir -p "$dest/lib/${triples[$i]}"
  if [ "$layout" = offload ]; then
    build_offload_devicertl "${triples[$i]}" "${names[$i]}"
  else
    build_openmp_device "${triples[$i]}" "${names[$i]}"
  fi
done
printf 'LLVM %s DeviceRTL, built from %s (sha256 %s) with %s (LLVM %s)\n' "$version" "$orig" "$sha256" \
  "$bin/clang" "$have" >"$dest/SOURCE"
if [ -n "${link_to:-}" ]; then
  rm -rf "${dest%.part}"
  mv "$dest" "${dest%.part}"
  dest=${dest%.part}
  rm -rf "$link_to"
  mkdir -p "$(dirname "$link_to")"
  ln -sfn "$dest" "$link_to"
fi
echo "$dest"
