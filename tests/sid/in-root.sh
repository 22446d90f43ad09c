#!/bin/sh
# Run a command inside a root directory (the sid root of build-root.sh) as
# the same process: every step execs the next (sh, unshare, sh, unshare,
# the command), so the pid a caller started or ember launched is the
# command's own, and a profiler attaching to it finds the interpreter there.
#
#   in-root.sh ROOT [--ro DIR | --rw DIR]... [--] CMD [ARG...]
#
# In a mount namespace of its own (propagation private: nothing it mounts
# reaches the caller's mount table, and it is gone with the last process in
# it) it bind-mounts /proc, /dev (with its submounts: /dev/shm, /dev/pts),
# /sys (read-only) and /tmp, and each DIR at its own path (--ro read-only,
# --rw writable; in the order given, so a --rw build tree may lie inside a
# --ro source tree), then runs CMD with ROOT as its root directory and the
# caller's working directory when ROOT has that path (else /).  So paths
# under /tmp and the given directories name the same files inside and out.
# Mount points missing in ROOT are created there.  PYTHONHOME, PYTHONPATH,
# LD_LIBRARY_PATH and LD_PRELOAD are dropped: they name the caller's files.
# Needs root (unshare -m, chroot).
set -eu

if [ "${1:-}" != "--in-ns" ]; then
	if [ $# -lt 2 ]; then
		echo "usage: in-root.sh ROOT [--ro DIR | --rw DIR]... [--] CMD [ARG...]" >&2
		exit 64
	fi
	if [ ! -x "$1/bin/sh" ]; then
		echo "in-root.sh: $1 is not a root directory (no bin/sh); build it with make sid-root" >&2
		exit 66
	fi
	unset PYTHONHOME PYTHONPATH LD_LIBRARY_PATH LD_PRELOAD
	exec unshare -m --propagation private -- /bin/sh "$0" --in-ns "$@"
fi
shift
root=$1
shift

# bind SRC [OPTIONS]: SRC at its own path under the root
bind() {
	mkdir -p "$root$1"
	mount --bind "$1" "$root$1"
	[ -z "${2:-}" ] || mount -o "remount,bind,$2" "$root$1"
}

bind /proc
mount --rbind /dev "$root/dev"
bind /sys ro
bind /tmp
while [ $# -gt 0 ]; do
	case "$1" in
	--ro | --rw)
		[ $# -ge 2 ] || { echo "in-root.sh: $1 needs a directory" >&2; exit 64; }
		dir=$(cd "$2" && pwd -P)
		if [ "$1" = --ro ]; then bind "$dir" ro; else bind "$dir"; fi
		shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "in-root.sh: no command" >&2; exit 64; }

wd=$(pwd -P)
[ -d "$root$wd" ] || wd=/
exec unshare --root="$root" --wd="$wd" -- "$@"
