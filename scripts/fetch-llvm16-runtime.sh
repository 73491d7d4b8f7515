#!/usr/bin/env bash
# Fetches LLVM 16's OpenMP offload runtime (Debian 12's libomp5-16; it conflicts with
# libomp-19-dev, so it is unpacked under target/ rather than installed) and lays out
# target/tools/llvm16/lib with exactly what a clang 19 program needs to run through libomptarget 16
# and our plugins:
#   libomptarget.so.16, libomp.so.5 and their unversioned links (from libomp-16-dev),
# and none of Debian's own libomptarget.rtl.* plugins, so that the ones in target/dist/lib are the
# only plugins libomptarget can find. libLLVM-16.so.1 (package libllvm16) is installed by setup.sh.
# The .debs stay in target/tools/debs (the GPU bundle carries them).
set -euo pipefail
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
lib=$tools/llvm16/lib
if [ -f "$lib/libomptarget.so.16" ] && [ -L "$lib/libomptarget.so" ] && [ -f "$lib/libomp.so.5" ]; then
  exit 0
fi
debs=$tools/debs
mkdir -p "$debs"
download() {
  (cd "$debs" && apt-get download -qq "$@" 2>/dev/null)
}
packages=(libomp5-16 libomp-16-dev)
if ! download "${packages[@]}"; then
  # A fresh machine may have no package lists yet.
  if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  download "${packages[@]}"
fi
staging=$tools/llvm16-root
rm -rf "$staging" "$tools/llvm16"
for p in "${packages[@]}"; do
  deb=$(find "$debs" -name "${p}_*.deb" | head -n1)
  [ -n "$deb" ] || { echo "fetch-llvm16-runtime: no .deb for $p" >&2; exit 1; }
  dpkg-deb -x "$deb" "$staging"
done
mkdir -p "$lib"
from=$staging/usr/lib/llvm-16/lib
cp -a "$from/libomptarget.so.16" "$from/libomptarget.so" "$from/libomp.so.5" "$from/libomp.so" "$lib/"
rm -rf "$staging"
if ls "$lib"/libomptarget.rtl.* >/dev/null 2>&1; then
  echo "fetch-llvm16-runtime: Debian plugins left in $lib" >&2
  exit 1
fi
echo "$lib"
