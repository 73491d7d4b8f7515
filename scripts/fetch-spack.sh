#!/usr/bin/env bash
# Spack 1.1.0 and its builtin package repository (v2025.11.0), unpacked at target/tools/spack for
# the Spack install test, with the solver Spack imports (clingo, pinned, from PyPI) in a virtual
# environment: run as `target/tools/spack/venv/bin/python target/tools/spack/spack/bin/spack`.
#
# Neither tarball can be downloaded here (Spack is on neither PyPI nor Debian, and these machines
# reach no other host): they are taken from the machine's cache directory
# (~/.cache/omptarget-indirect/src, as the LLVM source tarballs), or from $SPACK_TARBALLS (a
# directory holding both; by default ../shared/spack beside the checkout), checked against their
# sha256 and kept in the cache for the next checkout. Only the suite needs them (its Spack install
# test); `--check` (scripts/setup.sh asks it before installing anything) fails with one line
# when they are not at hand.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/target/tools/spack
spack_tarball=spack-1.1.0.tar.gz
spack_sha256=e05af08deb341b1612869df42a38fa3ccb49c84e2932f412b395807ea04781b4
packages_tarball=spack-packages-v2025.11.0.tar.gz
packages_sha256=afe66326546644e66a2d3e0ab10c06c77e8f4d20ed92b62832122dd2cc47f4a6
clingo=5.8.3

if [ -x "$dest/venv/bin/python" ] && [ -x "$dest/spack/bin/spack" ] \
  && [ -f "$dest/packages/repos/spack_repo/builtin/repo.yaml" ] \
  && "$dest/venv/bin/python" -c "import clingo" 2>/dev/null; then
  exit 0
fi

cache=${OMPTARGET_INDIRECT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/omptarget-indirect}
if ! { mkdir -p "$cache/src" 2>/dev/null && [ -w "$cache/src" ]; }; then
  cache=$root/target/tools
  mkdir -p "$cache/src"
fi
from=${SPACK_TARBALLS:-$root/../shared/spack}

# Puts tarball $1 with sha256 $2 into the cache (from $from when missing); prints its path.
cached() {
  local file=$cache/src/$1
  if [ ! -f "$file" ]; then
    if [ ! -f "$from/$1" ]; then
      echo "fetch-spack: $1 is neither in $cache/src nor in $from (set SPACK_TARBALLS to its directory)" >&2
      exit 1
    fi
    cp "$from/$1" "$file.partial"
    mv "$file.partial" "$file"
  fi
  if ! echo "$2  $file" | sha256sum --check --quiet --status; then
    echo "fetch-spack: $file does not have sha256 $2" >&2
    exit 1
  fi
  echo "$file"
}

if [ "${1:-}" = --check ]; then
  for tarball in "$spack_tarball" "$packages_tarball"; do
    if [ ! -f "$cache/src/$tarball" ] && [ ! -f "$from/$tarball" ]; then
      echo "[setup] error: the suite's Spack install test needs $tarball, which no registry serves: put it (and $( [ "$tarball" = "$spack_tarball" ] && echo "$packages_tarball" || echo "$spack_tarball")) in $cache/src or in a directory named by SPACK_TARBALLS (default: $from); the demo and an install do not need it" >&2
      exit 1
    fi
  done
  exit 0
fi
spack=$(cached "$spack_tarball" "$spack_sha256")
packages=$(cached "$packages_tarball" "$packages_sha256")
rm -rf "$dest"
mkdir -p "$dest/spack" "$dest/packages"
tar xzf "$spack" -C "$dest/spack" --strip-components=1
tar xzf "$packages" -C "$dest/packages" --strip-components=1
/usr/bin/python3 -m venv "$dest/venv"
"$dest/venv/bin/python" -m pip install -qq --disable-pip-version-check "clingo==$clingo"
echo "$dest"
