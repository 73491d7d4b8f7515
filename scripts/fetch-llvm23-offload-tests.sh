#!/usr/bin/env bash
# LLVM's own offload tests of indirect and virtual calls (offload/test/api/omp_indirect_*,
# omp_virtual_func*, offload/test/offloading/indirect_fp_mapping.c), from LLVM 23.1.1's source
# tarball (the newest LLVM source Debian serves, the one scripts/devicertl-from-source.sh builds
# LLVM 23's DeviceRTL from), unpacked under target/tools/llvm23-offload-tests. The suite builds
# and runs them as written (the table of docs/llvm24.md); nothing of them is in this repository.
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/target/tools/llvm23-offload-tests
[ -f "$dest/api/omp_virtual_func.cpp" ] && exit 0
tarball=$(DEVICERTL_SOURCE_ONLY=1 bash "$root/scripts/devicertl-from-source.sh" 23)
top=llvm-toolchain-23_23.1.1/offload/test
work=$(mktemp -d "${TMPDIR:-/tmp}/llvm23-offload-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work" --wildcards "$top/api/omp_indirect_*" "$top/api/omp_virtual_func*" \
  "$top/offloading/indirect_fp_mapping.c"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/$top" "$dest"
printf '[fetch-llvm23-offload-tests] %s\n' "$(cd "$dest" && find . -type f | sort | tr '\n' ' ')" >&2
