#!/bin/sh
# Build (or reuse) a cached Debian sid root directory for `make test-sid`:
# CPython releases newer than Debian 12's, run inside it by in-root.sh and
# profiled from the host.  mmdebstrap writes the tree from deb.debian.org.
#
#   sh tests/sid/build-root.sh [--force] [PACKAGES [ROOT]]
#
# PACKAGES: the package list (default tests/sid/packages.txt; '#' starts a
# comment).  ROOT: where the root directory goes (default $EMBER_SID_ROOT,
# else $HOME/.cache/ember/sid-root).  Another image (more packages) is the
# same call with its own list and directory.
#
# The root is rebuilt only when the package list, the mirror or RECIPE below
# change: their hash is kept inside the root as /etc/ember-sid-root.stamp
# (bump RECIPE with any change to this script that changes the tree).  It is
# built beside ROOT and renamed into place when complete, so ROOT is either
# the old root or the new one, never half of one.  --force rebuilds anyway.
# Needs root (mmdebstrap's root mode); exit 77 otherwise.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
force=0
if [ "${1:-}" = "--force" ]; then
	force=1
	shift
fi
list=${1:-$here/packages.txt}
root=${2:-${EMBER_SID_ROOT:-$HOME/.cache/ember/sid-root}}
mirror=${EMBER_SID_MIRROR:-http://deb.debian.org/debian}
RECIPE=1
case "$root" in /*) ;; *) root=$(pwd)/$root ;; esac

if [ ! -r "$list" ]; then
	echo "sid-root: no package list $list" >&2
	exit 66
fi
pkgs=$(sed -e 's/#.*//' "$list" | tr -s ' \t\n' '   ' | sed -e 's/^ //' -e 's/ $//')
stamp="recipe $RECIPE mirror $mirror packages $pkgs"
if [ $force = 0 ] && [ -f "$root/etc/ember-sid-root.stamp" ] &&
	[ "$(cat "$root/etc/ember-sid-root.stamp")" = "$stamp" ]; then
	echo "sid-root: $root is current (built in $(cat "$root/etc/ember-sid-root.seconds" 2>/dev/null || echo ?) s;" \
		"packages: $pkgs)"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "sid-root: building the sid root needs root (mmdebstrap)" >&2
	exit 77
fi
if ! command -v mmdebstrap >/dev/null 2>&1; then
	echo "sid-root: mmdebstrap is missing: sh scripts/install-deps.sh sid" >&2
	exit 69
fi

start=$(date +%s)
mkdir -p "$(dirname "$root")"
work="$root.build.$$"
old="$root.old.$$"
# Never delete through a mount a failed mmdebstrap may have left behind.
cleanup() {
	for d in "$work" "$old"; do
		[ -e "$d" ] || continue
		if grep -q " $d/" /proc/mounts; then
			echo "sid-root: $d still has mounts; left in place" >&2
		else
			rm -rf "$d"
		fi
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Packages of another architecture (libpython3.X-dev:arm64: the headers
# the AArch64 offset table is measured with) add theirs to the root's.
arches=$(dpkg --print-architecture)
for a in $(echo "$pkgs" | tr ' ' '\n' | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
	case ",$arches," in *",$a,"*) ;; *) arches="$arches,$a" ;; esac
done
echo "sid-root: mmdebstrap sid into $work ($pkgs from $mirror; architectures $arches)"
# The archive's Release file may be older than its Valid-Until (a frozen
# mirror): its date is not checked.  Documentation and translations are
# left out; apt's lists and cache are emptied afterwards.
timeout 3600 mmdebstrap --variant=apt --architectures="$arches" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--include="$(echo "$pkgs" | tr ' ' ',')" \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	--customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
	sid "$work" "deb $mirror sid main"

took=$(($(date +%s) - start))
echo "$stamp" > "$work/etc/ember-sid-root.stamp"
echo "$took" > "$work/etc/ember-sid-root.seconds"
if [ -e "$root" ]; then
	mv "$root" "$old"
fi
mv "$work" "$root"
cleanup
echo "sid-root: built in ${took}s: $root ($(du -sm "$root" | cut -f1) MiB)"
for v in $(ls "$root/usr/bin" | sed -n 's/^python\([0-9]*\.[0-9]*d\{0,1\}\)$/\1/p'); do
	echo "sid-root:   /usr/bin/python$v: $(chroot "$root" "/usr/bin/python$v" -c 'import sys; print(sys.version.split()[0])')"
done
