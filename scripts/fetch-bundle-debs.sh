#!/usr/bin/env bash
# Downloads the Debian 12 packages a GPU bundle part carries so that its libomptarget runs on a
# machine with only an NVIDIA driver. Nothing is installed: the .debs go to
# target/tools/debs/bundle-<part>/, and the part's run.sh unpacks them into a cache.
#
#   fetch-bundle-debs.sh llvm16   libomp5-16 (libomptarget.so.16, libomp.so.5), libllvm16
#   fetch-bundle-debs.sh llvm22   liboffload-22 (libomptarget.so.22.1, its CUDA plugin built in),
#                                 libomp5-19 (the libomp.so.5 it depends on), libllvm22
# each with the libraries its libLLVM links. Prints the folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
llvm_needs=(libz3-4 libicu72 libxml2 libedit2 libffi8 libbsd0 libmd0 libtinfo6 libzstd1 zlib1g liblzma5)
if [ "${1:-}" = llvm16 ]; then
  packages=(libomp5-16 libllvm16 "${llvm_needs[@]}")
elif [ "${1:-}" = llvm22 ]; then
  packages=(liboffload-22 libomp5-19 libllvm22 "${llvm_needs[@]}")
else
  echo "usage: $0 llvm16|llvm22" >&2
  exit 2
fi
dir=$root/target/tools/debs/bundle-$1
have_all() {
  for p in "${packages[@]}"; do
    ls "$dir/${p}_"*.deb >/dev/null 2>&1 || return 1
  done
}
if have_all; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
download() {
  (cd "$dir" && apt-get download -qq "${packages[@]}" 2>/dev/null)
}
if ! download; then
  if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  download
fi
have_all || { echo "fetch-bundle-debs: some packages are missing in $dir" >&2; exit 1; }
echo "$dir"
