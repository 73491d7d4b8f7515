#!/usr/bin/env bash
# Downloads the Debian 12 packages the GPU bundle carries so that LLVM 16's libomptarget runs on a
# machine with only an NVIDIA driver: libomp5-16 (libomptarget.so.16, libomp.so.5), libllvm16
# (libLLVM-16.so.1) and the libraries libLLVM-16 links. Nothing is installed: the .debs go to
# target/tools/debs/bundle/, and the bundle's run.sh unpacks them beside itself.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/target/tools/debs/bundle
packages=(libomp5-16 libllvm16 libz3-4 libicu72 libxml2 libedit2 libffi8 libbsd0 libmd0 libtinfo6 libzstd1 zlib1g liblzma5)
have_all() {
  for p in "${packages[@]}"; do
    ls "$dir/${p}_"*.deb >/dev/null 2>&1 || return 1
  done
}
if have_all; then
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
