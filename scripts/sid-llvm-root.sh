#!/usr/bin/env bash
# Makes target/tools/sid-llvm<N> (N: the first argument): LLVM N from Debian sid, whose packages
# need sid's C library, in a root of its own (mmdebstrap; one root per release, since libomp-N-dev
# and liboffload-N of two releases conflict), and beside it
#   enter            scripts/sid-root-enter.sh: runs a command with the root's /usr over the
#                    machine's, in a private mount namespace, every other path the machine's; the
#                    executables LLVM N links run through it;
#   bin/<program>    one wrapper per program of LLVM N the build and the tests start (clang, opt,
#                    ...), each `enter /usr/lib/llvm-N/bin/<program>`;
#   bin/llvm-config  scripts/sid-root-llvm-config.sh: the root's, answering its directories as the
#                    machine sees them (and bin/ as its programs).
# The archive's sid Release file is past its Valid-Until date, hence the option. The mirror is the
# one apt is configured with. Safe to run again: a complete root is left as it is.
#
# LLVM 24 is LLVM's main branch before its release: Debian experimental's llvm-toolchain-snapshot
# over sid, every package of it pinned to one version (SNAPSHOT_24 below; experimental keeps only
# its newest, so when Debian's snapshot moves the root cannot be made until that line, and the
# release record's `snapshot`, name the new one).
#
# The root (2.5 GB, about 90 s) is made once per machine: in the cache directory
# ($OMPTARGET_INDIRECT_CACHE, else $XDG_CACHE_HOME/omptarget-indirect, else
# ~/.cache/omptarget-indirect), and target/tools/sid-llvm<N>/root links to it, so that every clone
# of the project shares it. Where no cache directory can be written, the root is made in the clone.
set -euo pipefail
major=${1-}
[ -n "$major" ] || { echo "usage: scripts/sid-llvm-root.sh MAJOR" >&2; exit 1; }
SNAPSHOT_24='1:24~++20261025103442+7e3c57157096-1~exp1'
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/target/tools/sid-llvm$major
# LLVM 24's root also holds the header-only C++ libraries of the stock-parity corpus
# (tests/corpus/), from sid: the table of docs/llvm24.md builds the corpus with stock clang 24.
corpus_libraries=
corpus_header=
if [ "$major" = 24 ]; then
  corpus_libraries="libboost-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libglm-dev libeigen3-dev"
  corpus_header=usr/include/glm/glm.hpp
fi
# A root is complete with its clang (and LLVM 24's with the corpus's libraries).
root_complete() {
  [ -x "$1/usr/lib/llvm-$major/bin/clang" ] && { [ -z "$corpus_header" ] || [ -f "$1/$corpus_header" ]; }
}
complete() {
  [ -x "$dest/enter" ] && [ -x "$dest/bin/llvm-config" ] && root_complete "$dest/root"
}
if complete; then
  exit 0
fi
cache=${OMPTARGET_INDIRECT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/omptarget-indirect}
shared=
if mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
  shared=$cache/sid-llvm$major-root
fi
made=$dest/root
if [ -n "$shared" ]; then
  made=$shared
fi
if ! root_complete "$made"; then
  mirror=$(awk '$1 == "URIs:" { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
  fi
  [ -n "$mirror" ] || { echo "sid-llvm-root: no Debian mirror in apt's configuration" >&2; exit 1; }
  names="clang-$major clang-tools-$major llvm-$major llvm-$major-dev libclang-$major-dev"
  names="$names libclang-cpp$major-dev libomp-$major-dev liboffload-$major liboffload-$major-dev"
  names="$names lld-$major flang-$major"
  sources=("$mirror")
  pin=
  if [ "$major" = 24 ]; then
    # libomp-24-dev needs the snapshot's libomp5, which sid has older.
    names="$names libomp5"
    sources=("deb $mirror sid main" "deb $mirror experimental main")
    pin="=$SNAPSHOT_24"
    listed=$(curl -fsSL "$mirror/dists/experimental/main/binary-amd64/Packages.xz" | xz -dc \
      | awk '$1 == "Package:" { p = $2 } $1 == "Version:" && p == "clang-24" && !v { v = $2 } END { print v }') \
      || listed=
    if [ "$listed" != "$SNAPSHOT_24" ]; then
      echo "sid-llvm-root: Debian experimental has clang-24 ${listed:-(none found)}, not the pinned $SNAPSHOT_24: name the new snapshot in scripts/sid-llvm-root.sh (SNAPSHOT_24) and in LLVM 24's release record" >&2
      exit 1
    fi
  fi
  packages=binutils
  for name in $names; do
    packages="$packages,$name$pin"
  done
  for name in $corpus_libraries; do
    packages="$packages,$name"
  done
  # Made beside its place and moved there whole: a root half made (or made by two clones at once)
  # is never taken for a complete one.
  rm -rf "$made.part"
  mkdir -p "$(dirname "$made")"
  suite=sid
  mmdebstrap --quiet --mode=root --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' --include="$packages" "$suite" "$made.part" "${sources[@]}"
  rm -rf "$made"
  mv "$made.part" "$made"
fi
mkdir -p "$dest/bin"
if [ -n "$shared" ]; then
  rm -rf "$dest/root"
  ln -sfn "$shared" "$dest/root"
fi
cp "$root/scripts/sid-root-enter.sh" "$dest/enter"
sed "s/@MAJOR@/$major/" "$root/scripts/sid-root-llvm-config.sh" > "$dest/bin/llvm-config"
programs="clang clang++ flang opt llc llvm-link llvm-extract llvm-nm llvm-ar llvm-ranlib llvm-dis ld.lld"
programs="$programs clang-linker-wrapper clang-offload-packager llvm-offload-binary"
for program in $programs; do
  printf '#!/bin/sh\nexec "$(dirname "$0")/../enter" /usr/lib/llvm-%s/bin/%s "$@"\n' "$major" "$program" \
    > "$dest/bin/$program"
done
chmod +x "$dest/enter" "$dest/bin"/*
complete
echo "$dest"
