#!/usr/bin/env bash
# `enter` of a root made by scripts/sid-llvm-root.sh: runs "$@" with the root's /usr (and its
# ld.so.cache and alternatives) over the machine's, in a private mount namespace (a user namespace
# too where it is not run as root). Every other path stays the machine's, so the program reads
# and writes the same files as any other. LD_PRELOAD and LD_DEBUG apply to "$@" alone, not to the
# shell and unshare on the way.
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" = 0 ]; then
  namespace=(unshare --mount --propagation private)
else
  namespace=(unshare --map-root-user --mount --propagation private)
fi
export ENTER_PRELOAD="${LD_PRELOAD-}" ENTER_DEBUG="${LD_DEBUG-}"
unset LD_PRELOAD LD_DEBUG
# The binds that need the machine's mount come first: once /usr is the root's, it is gone.
inner='mount --bind "$0/etc/ld.so.cache" /etc/ld.so.cache || exit 1
mount --bind "$0/etc/alternatives" /etc/alternatives || exit 1
mount --rbind "$0/usr" /usr || exit 1
if [ -n "$ENTER_PRELOAD" ]; then export LD_PRELOAD=$ENTER_PRELOAD; fi
if [ -n "$ENTER_DEBUG" ]; then export LD_DEBUG=$ENTER_DEBUG; fi
unset ENTER_PRELOAD ENTER_DEBUG
exec "$@"'
exec "${namespace[@]}" bash -c "$inner" "$here/root" "$@"
