#!/usr/bin/env bash
# Fetches Debian 12's nvidia-cuda-toolkit (CUDA 11.8: ptxas, nvlink, fatbinary, cuobjdump,
# nvdisasm, libdevice) into target/tools/ without touching the system's apt configuration, and
# lays out target/tools/cuda, a directory clang 19 accepts as --cuda-path. No GPU is needed.
set -euo pipefail
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
cuda=$tools/cuda
# The tools are hard links, not symbolic ones: flang takes no --cuda-path and finds CUDA through
# the ptxas on PATH, by its real path (a symbolic link would lead it to the package's /usr, which
# has no libdevice where clang looks).
layout() {
  rm -rf "$cuda"
  mkdir -p "$cuda/bin" "$cuda/nvvm/libdevice" "$cuda/include"
  for tool in ptxas nvlink fatbinary cuobjdump nvdisasm; do
    ln "$tools/root/usr/bin/$tool" "$cuda/bin/$tool"
  done
  cp "$tools/root/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" "$cuda/nvvm/libdevice/"
  # clang reads the version from version.txt and cuda.h; 11.8 knows sm_90.
  echo "CUDA Version 11.8.89" > "$cuda/version.txt"
  echo "#define CUDA_VERSION 11080" > "$cuda/include/cuda.h"
}
if [ -x "$cuda/bin/ptxas" ] && [ ! -L "$cuda/bin/ptxas" ] && [ -x "$cuda/bin/cuobjdump" ] \
  && [ -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  exit 0
fi
if [ -x "$tools/root/usr/bin/ptxas" ] && [ -f "$tools/root/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" ]; then
  layout
  exit 0
fi
apt_dir=$tools/apt
rm -rf "$apt_dir"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
# The package is in the non-free component, which the system's sources usually leave out: take
# the Debian mirror this machine's apt already uses for the release (sites with local mirrors or
# proxies need theirs) and ask it for non-free too.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
mirror=$(apt-cache policy 2>/dev/null \
  | awk -v suite="$codename/main" '$3 == suite && $2 ~ /^(https?|file):/ { print $2; exit }')
if [ -z "$codename" ] || [ -z "$mirror" ]; then
  echo "fetch-cuda-tools: no Debian mirror for '${codename:-unknown release}' main in this machine's apt sources (apt-cache policy); configure one, then run again" >&2
  exit 1
fi
echo "deb $mirror $codename main contrib non-free" > "$apt_dir/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1
      -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update -qq
# One package holds every binary used here and libdevice; they need only glibc.
(cd "$apt_dir/debs" && apt-get "${opts[@]}" download -qq nvidia-cuda-toolkit)
deb=$(find "$apt_dir/debs" -name 'nvidia-cuda-toolkit_*.deb' | head -n1)
if [ -z "$deb" ]; then
  echo "fetch-cuda-tools: apt-get download nvidia-cuda-toolkit produced no .deb" >&2
  exit 1
fi
rm -rf "$tools/root" "$cuda"
dpkg-deb -x "$deb" "$tools/root"
layout
rm -rf "$apt_dir"
"$cuda/bin/ptxas" --version | tail -n 1
