#!/usr/bin/env bash
# Fetches LLVM 22's OpenMP headers (Debian 12's libomp-22-dev, which conflicts with libomp-19-dev,
# so it is unpacked under target/ rather than installed) and lays out target/tools/llvm22 with
# what clang-22 needs beside Debian's clang-22 and liboffload-22-dev:
#   include/omp.h (and ompx.h, omp-tools.h): without LLVM's omp.h, omp_is_initial_device() in
#                 x86_64 device code is libomp's host function, which answers 1;
#   lib/libomp.so: the unversioned link clang-22's -fopenmp link looks for, to the installed
#                 libomp.so.5 (package libomp5-19, which liboffload-22 depends on).
# The .deb stays in target/tools/debs.
set -euo pipefail
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
dest=$tools/llvm22
if [ -f "$dest/include/omp.h" ] && [ -L "$dest/lib/libomp.so" ]; then
  exit 0
fi
debs=$tools/debs
mkdir -p "$debs"
download() {
  (cd "$debs" && apt-get download -qq "$@" 2>/dev/null)
}
if ! download libomp-22-dev; then
  # A fresh machine may have no package lists yet.
  if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  download libomp-22-dev
fi
deb=$(find "$debs" -name 'libomp-22-dev_*.deb' | head -n1)
[ -n "$deb" ] || { echo "fetch-llvm22-openmp: no .deb for libomp-22-dev" >&2; exit 1; }
staging=$tools/llvm22-root
rm -rf "$staging" "$dest"
dpkg-deb -x "$deb" "$staging"
mkdir -p "$dest/include" "$dest/lib"
cp "$staging"/usr/lib/llvm-22/lib/clang/22/include/omp*.h "$dest/include/"
rm -rf "$staging"
libomp=/usr/lib/x86_64-linux-gnu/libomp.so.5
[ -f "$libomp" ] || { echo "fetch-llvm22-openmp: $libomp is missing (Debian package libomp5-19)" >&2; exit 1; }
ln -s "$libomp" "$dest/lib/libomp.so"
echo "$dest"
