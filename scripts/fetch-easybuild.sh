#!/usr/bin/env bash
# Installs EasyBuild (from PyPI, pinned) into a virtual environment at target/tools/easybuild for
# the cluster install test, which installs install/easybuild/*.eb with it, as an unprivileged user
# with Lmod (Debian's lmod) as the modules tool.
set -euo pipefail
if [ "${1:-}" = --check ]; then exit 0; fi  # scripts/setup.sh asks: what it fetches, the network serves
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/target/tools/easybuild
version=5.4.1
if [ -x "$dest/bin/eb" ] && "$dest/bin/python" -c "import easybuild" 2>/dev/null; then
  exit 0
fi
rm -rf "$dest"
/usr/bin/python3 -m venv "$dest"
"$dest/bin/python" -m pip install -qq --disable-pip-version-check "easybuild==$version"
echo "$dest"
