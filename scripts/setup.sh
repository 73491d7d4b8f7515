#!/usr/bin/env bash
# Installs everything the build, tests and demo need on a fresh Debian 12 machine:
#   - the pinned Rust toolchain of rust-toolchain.toml (rustup; RUSTUP_AUTO_INSTALL=0 is honoured),
#   - every line of scripts/requirements.txt whose location is missing, from its provider: Debian
#     packages (apt-get), cargo-fuzz (cargo +stable install), and what scripts/fetch-*.sh unpack
#     under target/tools (CUDA 11.8's ptxas and friends, LLVM 16's offload runtime, LLVM 22's
#     omp.h), which conflict with installed packages or live in non-free.
# Safe to run again: a line whose location is present costs one test. Fails if anything is still
# missing afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
case $root in
  *[[:space:]]*)
    echo "[setup] error: the clone is at '$root', a path with white space in it: the strict device is loaded through LD_PRELOAD, which splits its list at spaces, so its tests cannot pass there; clone into a path without spaces" >&2
    exit 1 ;;
esac

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

# --- Everything else: the lines of scripts/requirements.txt whose location is missing -------------
list=$root/scripts/requirements.txt
present() {  # location: /absolute, repository-relative (has a /), or a program on PATH
  case $1 in
    /*) [ -e "$1" ] ;;
    */*) [ -e "$root/$1" ] ;;
    *) command -v "$1" >/dev/null ;;
  esac
}
debs=() scripts=() crates=()
while read -r name location provider; do
  case $name in ''|'#'*) continue ;; esac
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
  mapfile -t scripts < <(in_list_order "${scripts[@]}")
  for script in "${scripts[@]}"; do
    say "running scripts/$script"
    bash "$root/scripts/$script" >/dev/null
  done
fi
still=()
while read -r name location provider; do
  case $name in ''|'#'*) continue ;; esac
  present "$location" || still+=("$name ($location, $provider)")
done < "$list"
if [ ${#still[@]} -gt 0 ]; then
  echo "[setup] error: still missing after installing: ${still[*]}" >&2
  exit 1
fi
say "ready: $(rustup run "$toolchain" rustc --version), $(clang-19 --version | head -n1), $(clang-22 --version | head -n1), $("$root/target/tools/cuda/bin/ptxas" --version | tail -n1)"
