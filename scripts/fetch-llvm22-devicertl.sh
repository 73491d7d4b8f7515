#!/usr/bin/env bash
# Builds LLVM 22's GPU device runtime (DeviceRTL: libomptarget-{nvptx,amdgpu}.bc and
# libompdevice.a), which Debian's LLVM 22 does not ship, from LLVM's own source as Debian
# distributes it, with Debian's clang-22:
#   target/tools/llvm22-devicertl/lib/nvptx64-nvidia-cuda/{libomptarget-nvptx.bc,libompdevice.a}
#   target/tools/llvm22-devicertl/lib/amdgcn-amd-amdhsa/{libomptarget-amdgpu.bc,libompdevice.a}
# clang 22 finds them with --libomptarget-{nvptx,amdgpu}-bc-path=DIR and -Xoffload-linker -LDIR
# (docs/llvm22-gpu.md).
#
# The source: the upstream tarball of Debian's source package llvm-toolchain-22, from the main
# archive of the Debian mirror apt is configured with (the security archive serves no source
# files), checked against its sha256 and kept in target/tools/src. Only the directories the
# runtime is built from are unpacked. No root is needed.
#
# Another LLVM 22 (a cluster's module, a distribution's clang without its GPU runtime):
#   LLVM22_BIN=<its bin directory> DEVICERTL_DEST=<where to put lib/> scripts/fetch-llvm22-devicertl.sh
# It must be release 22.1.8, the source this script checks; LLVM22_SOURCE=<tarball> uses a
# tarball already at hand (same checksum) instead of downloading.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
version=22.1.8
orig=llvm-toolchain-22_$version.orig.tar.xz
sha256=b49b9277aef97616320b2da259e1f8174c65b0ce2fbe2e8629644a97693402fe
bin=${LLVM22_BIN:-/usr/lib/llvm-22/bin}
dest=${DEVICERTL_DEST:-$tools/llvm22-devicertl}
triples=(nvptx64-nvidia-cuda amdgcn-amd-amdhsa)
libs=(libomptarget-nvptx.bc libomptarget-amdgpu.bc)

say() { printf '[fetch-llvm22-devicertl] %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

built=1
for i in 0 1; do
  [ -f "$dest/lib/${triples[$i]}/${libs[$i]}" ] && [ -f "$dest/lib/${triples[$i]}/libompdevice.a" ] || built=0
done
[ "$built" = 1 ] && exit 0

for tool in clang clang++ llvm-ar llvm-ranlib llvm-nm ld.lld llvm-config; do
  [ -x "$bin/$tool" ] || fail "$bin/$tool is missing (Debian: clang-22, llvm-22, lld-22)"
done
have=$("$bin/llvm-config" --version)
[ "$have" = "$version" ] || fail "$bin holds LLVM $have, this script the runtime of $version: they must match"

# The mirror: the first URIs/deb line of apt's configuration that serves the main archive
# (not the security one, whose pool has no source files).
uris='/^URIs:/ { for (i = 2; i <= NF; i++) print $i } /^deb[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { print $i; break } }'
mirror() {
  local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list)
  for file in "${files[@]}"; do
    if [ -f "$file" ]; then awk "$uris" "$file"; fi
  done | grep -v -e security -e '^cdrom:' | head -n1
}

tarball=${LLVM22_SOURCE:-$tools/src/$orig}
if [ ! -f "$tarball" ] || [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$sha256" ]; then
  [ -z "${LLVM22_SOURCE:-}" ] || fail "$LLVM22_SOURCE is not $orig (sha256 $sha256)"
  base=$(mirror)
  [ -n "$base" ] || fail "no Debian mirror in apt's configuration (/etc/apt/sources.list*): \
set LLVM22_SOURCE to a copy of $orig"
  mkdir -p "$tools/src"
  url=${base%/}/pool/main/l/llvm-toolchain-22/$orig
  say "downloading $orig (197 MB) from the main archive of $base"
  curl -sSfL --retry 3 -o "$tarball.part" "$url" || fail "cannot download $url"
  got=$(sha256sum "$tarball.part" | cut -d' ' -f1)
  [ "$got" = "$sha256" ] || { rm -f "$tarball.part"; fail "$url has sha256 $got, not $sha256"; }
  mv "$tarball.part" "$tarball"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/llvm22-devicertl.XXXXXX")
trap 'rm -rf "$work"' EXIT
top=llvm-toolchain-22_$version
# openmp/device is the runtime; it includes offload/include and libc/shared; runtimes/, cmake/
# and llvm/cmake drive the standalone build.
tar -xJf "$tarball" -C "$work" \
  "$top/runtimes" "$top/cmake" "$top/llvm/cmake" "$top/openmp" "$top/offload/include" "$top/libc/shared"

for i in 0 1; do
  triple=${triples[$i]}
  build=$work/build-$triple
  say "building the DeviceRTL for $triple"
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
  mkdir -p "$dest/lib/$triple"
  cp "$build/lib/$triple/${libs[$i]}" "$build/lib/$triple/libompdevice.a" "$dest/lib/$triple/"
done
printf 'LLVM %s DeviceRTL, built from %s (sha256 %s) with %s\n' "$version" "$orig" "$sha256" "$bin/clang" \
  >"$dest/SOURCE"
echo "$dest"
