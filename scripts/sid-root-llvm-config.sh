#!/bin/sh
# bin/llvm-config of a root made by scripts/sid-llvm-root.sh (@MAJOR@: its release): the root's
# own, its directories as the machine sees them (under root/), and bin/ as its programs (the
# wrappers that run them in the root).
here=$(cd "$(dirname "$0")" && pwd)
if [ "$1" = --bindir ]; then
  echo "$here"
  exit 0
fi
"$here/../enter" /usr/lib/llvm-@MAJOR@/bin/llvm-config "$@" | sed "s# /usr/# $here/../root/usr/#g; s#^/usr/#$here/../root/usr/#; s#-L/usr/#-L$here/../root/usr/#g; s#-I/usr/#-I$here/../root/usr/#g"
