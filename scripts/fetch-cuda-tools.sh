#!/usr/bin/env bash
# Fetches Debian 12's nvidia-cuda-toolkit (CUDA 11.8: ptxas, nvlink, fatbinary, cuobjdump, libdevice)
# into target/tools/ without touching the system's apt sources, and lays out a directory that
# clang 19 accepts as --cuda-path (target/tools/cuda).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
cuda=$tools/cuda
if [ -x "$cuda/bin/ptxas" ] && [ -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  exit 0
fi
apt_dir=$tools/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/debs"
cat > "$apt_dir/sources.list" <<SRC
deb http://deb.debian.org/debian bookworm main contrib non-free
SRC
opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt_dir/lists" -o Debug::NoLocking=1)
apt-get "${opts[@]}" update -qq
# One package holds every binary used here (ptxas, nvlink, fatbinary, cuobjdump, nvdisasm) and
# libdevice; all are statically linked against CUDA's own code and need only glibc.
(cd "$apt_dir/debs" && apt-get "${opts[@]}" download -qq nvidia-cuda-toolkit 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
deb=$(ls "$apt_dir"/debs/nvidia-cuda-toolkit_*.deb)
rm -rf "$tools/root"
dpkg-deb -x "$deb" "$tools/root"
rm -rf "$cuda"
mkdir -p "$cuda/bin" "$cuda/nvvm/libdevice" "$cuda/include"
for tool in ptxas nvlink fatbinary cuobjdump nvdisasm; do
  ln -s "$tools/root/usr/bin/$tool" "$cuda/bin/$tool"
done
cp "$tools/root/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" "$cuda/nvvm/libdevice/"
# clang reads the version from version.txt and cuda.h; 11.8 knows sm_90.
echo "CUDA Version 11.8.89" > "$cuda/version.txt"
echo "#define CUDA_VERSION 11080" > "$cuda/include/cuda.h"
"$cuda/bin/ptxas" --version | tail -n 1
