#!/usr/bin/env bash
# Installs what a command needs on a fresh Debian 12 machine:
#   scripts/setup.sh demo      what scripts/demo.sh needs (LLVM 19 and 22 from Debian, LLVM 16's
#                              offload runtime, LLVM 22's omp.h; CUDA 11.8's tools too where an
#                              NVIDIA driver is installed: the demo's C table then runs on GPU 0)
#   scripts/setup.sh install   what cargo xtask install needs for Debian's LLVM 19 and 22
#   scripts/setup.sh [suite]   everything scripts/test.sh needs (the default)
# That is: the pinned Rust toolchain of rust-toolchain.toml (rustup; RUSTUP_AUTO_INSTALL=0 is
# honoured), and every line of scripts/requirements.txt the command needs (its `for` column) whose
# location is missing, from its provider: Debian packages (apt-get), cargo-fuzz (cargo +stable
# install), and what scripts/fetch-*.sh unpack under target/tools (CUDA 11.8's ptxas and friends,
# LLVM 16's offload runtime, LLVM 22's omp.h, Debian sid's LLVM 21 and 23, DeviceRTLs built from
# LLVM's source, Spack, EasyBuild). Before installing anything it asks each of those scripts
# whether it can run here (`--check`): the Spack tarballs, which no registry serves, must be given
# (scripts/fetch-spack.sh says where), and a missing one stops the setup at once.
# Safe to run again: a line whose location is present costs one test. Fails if anything the
# command needs is still missing afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
need=${1:-suite}
if ! printf '%s\n' demo install suite | grep -qx -- "$need"; then
  echo "[setup] error: usage: scripts/setup.sh [demo|install|suite], not '$need'" >&2
  exit 2
fi
needs=("$need")
# The demo's C table runs on GPU 0 where the NVIDIA driver is installed (cargo xtask demo asks it).
if [ "$need" = demo ] && [ -e /proc/driver/nvidia/version ]; then
  needs+=(gpu-demo)
fi
needed() {  # for-column: whether the command at hand needs the line
  local word
  for word in ${1//,/ }; do
    for n in "${needs[@]}"; do [ "$word" = "$n" ] && return 0; done
  done
  return 1
}
case $root in
  *[[:space:]]*)
    echo "[setup] error: the clone is at '$root', a path with white space in it: the strict device is loaded through LD_PRELOAD, which splits its list at spaces, so its tests cannot pass there; clone into a path without spaces" >&2
    exit 1 ;;
esac

say() { printf '[setup] %s\n' "$*"; }

# --- What the command needs: the lines of scripts/requirements.txt whose location is missing -----
list=$root/scripts/requirements.txt
present() {  # location: /absolute, repository-relative (has a /), or a program on PATH
  case $1 in
    /*) [ -e "$1" ] ;;
    */*) [ -e "$root/$1" ] ;;
    *) command -v "$1" >/dev/null ;;
  esac
}
debs=() scripts=() crates=()
while read -r name location provider for; do
  case $name in ''|'#'*) continue ;; esac
  needed "$for" || continue
  present "$location" && continue
  case $provider in
    deb:*) debs+=("${provider#deb:}") ;;
    script:*) scripts+=("${provider#script:}") ;;
    cargo:*) crates+=("${provider#cargo:}") ;;
    *) echo "[setup] error: $name ($location) is missing and comes from $provider: install it" >&2; exit 1 ;;
  esac
done < "$list"
unique() { printf '%s\n' "$@" | sort -u; }
# The scripts in the order of the list: one may need what an earlier one made (LLVM 21's DeviceRTL
# is built with the clang of LLVM 21's root).
in_list_order() { printf '%s\n' "$@" | awk '!seen[$0]++'; }

# What no registry serves must be at hand before anything is installed: each script says so.
if [ ${#scripts[@]} -gt 0 ]; then
  mapfile -t scripts < <(in_list_order "${scripts[@]}")
  for script in "${scripts[@]}"; do
    bash "$root/scripts/$script" --check || exit 1
  done
fi

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

# Debian packages first: the scripts below unpack next to what they install.
if [ ${#debs[@]} -gt 0 ]; then
  mapfile -t debs < <(unique "${debs[@]}")
  say "installing Debian packages: ${debs[*]}"
  if [ "$(id -u)" = 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "[setup] error: need root (or sudo) to install: ${debs[*]}" >&2; exit 1
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debs[@]}" >/dev/null
fi
# cargo-fuzz needs a newer rustc than the pinned nightly: built with the stable toolchain.
if [ ${#crates[@]} -gt 0 ]; then
  mapfile -t crates < <(unique "${crates[@]}")
  say "installing ${crates[*]} (with the stable toolchain)"
  rustup run stable rustc --version >/dev/null 2>&1 || rustup toolchain install stable --profile minimal
  for crate in "${crates[@]}"; do cargo +stable install "$crate" --locked --quiet; done
fi
# CUDA 11.8 tools, LLVM 16's offload runtime, LLVM 22's omp.h: unpacked under target/tools.
if [ ${#scripts[@]} -gt 0 ]; then
  for script in "${scripts[@]}"; do
    say "running scripts/$script"
    bash "$root/scripts/$script" >/dev/null
  done
fi
still=()
while read -r name location provider for; do
  case $name in ''|'#'*) continue ;; esac
  needed "$for" || continue
  present "$location" || still+=("$name ($location, $provider)")
done < "$list"
if [ ${#still[@]} -gt 0 ]; then
  echo "[setup] error: still missing after installing: ${still[*]}" >&2
  exit 1
fi
ready="$(rustup run "$toolchain" rustc --version), $(clang-19 --version | head -n1), $(clang-22 --version | head -n1)"
if [ -x "$root/target/tools/cuda/bin/ptxas" ]; then
  ready="$ready, $("$root/target/tools/cuda/bin/ptxas" --version | tail -n1)"
fi
say "ready for the $need: $ready"
