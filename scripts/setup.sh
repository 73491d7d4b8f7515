#!/usr/bin/env bash
# Installs everything the build, tests and demo need on a fresh Debian 12 machine:
#   - the pinned Rust toolchain of rust-toolchain.toml (rustup; RUSTUP_AUTO_INSTALL=0 is honoured),
#   - cargo-fuzz (built with the stable toolchain: it needs a newer rustc than the pinned one),
#   - Debian packages: clang 19 and its tools, LLVM 19 (and its headers and llvm-config, for the pass
#     plugin), lld 19, the OpenMP 19 runtime, ROCm device
#     libraries (clang 19 needs them for AMDGPU OpenMP links), valgrind, libffi-dev (x86_64 plugin),
#     libllvm16 (libomptarget 16 needs libLLVM-16.so.1), ROCm's HSA runtime and headers (the AMDGPU
#     plugin's tests load the real library and compare its ABI values with the headers),
#   - the CUDA 11.8 tools (ptxas, nvlink, cuobjdump, libdevice) unpacked under target/tools/,
#   - LLVM 16's libomptarget and libomp unpacked under target/tools/llvm16 (they run the programs),
#   - clang 22, LLVM 22's headers and llvm-config (the LLVM 22 pass plugin) and its stock
#     libomptarget 22 with the link clang-22 needs (liboffload-22-dev); LLVM 22's omp.h unpacked
#     under target/tools/llvm22 (libomp-22-dev would remove libomp-19-dev).
# Safe to run again: each step does nothing when its part is already present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

say() { printf '[setup] %s\n' "$*"; }

# --- Rust -------------------------------------------------------------------------------------
toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
components=$(sed -n 's/^components *= *\[\(.*\)\]/\1/p' rust-toolchain.toml | tr -d '" ' )
if ! command -v rustup >/dev/null; then
  echo "[setup] error: rustup is not installed (https://rustup.rs)" >&2
  exit 1
fi
if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1 \
   || ! rustup component list --toolchain "$toolchain" --installed 2>/dev/null | grep -q '^rust-src'; then
  say "installing Rust $toolchain with $components"
  rustup toolchain install "$toolchain" --profile minimal --component "$components"
fi

# --- cargo-fuzz (the fuzz targets of fuzz/; it needs a newer rustc than the pinned nightly) -------
if ! cargo fuzz --version >/dev/null 2>&1; then
  say "installing cargo-fuzz (with the stable toolchain)"
  rustup run stable rustc --version >/dev/null 2>&1 || rustup toolchain install stable --profile minimal
  cargo +stable install cargo-fuzz --locked --quiet
fi

# --- Debian packages --------------------------------------------------------------------------
packages=(clang-19 clang-tools-19 llvm-19 llvm-19-dev lld-19 libomp-19-dev rocm-device-libs valgrind libffi-dev libllvm16
          libhsa-runtime64-1 libhsa-runtime-dev clang-22 llvm-22-dev liboffload-22-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "[setup] error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- CUDA 11.8 tools (no GPU needed) ----------------------------------------------------------
bash "$root/scripts/fetch-cuda-tools.sh" >/dev/null
# --- LLVM 16 offload runtime (conflicts with libomp-19-dev as a package) -----------------------
bash "$root/scripts/fetch-llvm16-runtime.sh" >/dev/null
# --- LLVM 22's omp.h (libomp-22-dev conflicts with libomp-19-dev as a package) -----------------
bash "$root/scripts/fetch-llvm22-openmp.sh" >/dev/null
say "ready: $(rustup run "$toolchain" rustc --version), $(clang-19 --version | head -n1), $(clang-22 --version | head -n1), $("$root/target/tools/cuda/bin/ptxas" --version | tail -n1)"
