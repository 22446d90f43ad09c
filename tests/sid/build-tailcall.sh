#!/bin/sh
# Build (or reuse) a CPython 3.14 with the tail-calling interpreter
# (configure --with-tail-call-interp, clang): each opcode is a function of its
# own that tail-calls the next, the build python-build-standalone (uv's
# Pythons) ships.  Debian builds its python3.14 with GCC, without it, so the
# e2e check of ember on such a build (tests/e2e/test_python_tailcall.py)
# needs this one.
#
#   sh tests/sid/build-tailcall.sh [--force] [ROOT]
#
# ROOT (default $EMBER_TAILCALL_ROOT, else $HOME/.cache/ember/tailcall-root)
# is a Debian sid root directory made by mmdebstrap with clang and the
# headers CPython's modules need; the interpreter is built inside it and
# installed into ROOT/opt/python3.14-tailcall (shared libpython, rpath set,
# -O3 -g: DWARF and a .symtab are kept).  The source is Debian's:
# `apt-get source python3.14` inside the root, upstream's tarball unpacked
# without Debian's patches.  Where the mirror serves no source package,
# EMBER_TAILCALL_SRC names a CPython 3.14 source tree or tarball to use
# instead.  Everything stays outside the git tree.
#
# Nothing is redone when ROOT/etc/ember-tailcall.stamp matches this recipe and
# the source's version (--force rebuilds).  Needs root (mmdebstrap, chroot):
# exit 77 otherwise.  About 50 s for the root and 8-10 min for CPython on two
# cores (nice, -j2).
set -eu

force=0
if [ "${1:-}" = "--force" ]; then
	force=1
	shift
fi
root=${1:-${EMBER_TAILCALL_ROOT:-$HOME/.cache/ember/tailcall-root}}
mirror=${EMBER_SID_MIRROR:-http://deb.debian.org/debian}
src=${EMBER_TAILCALL_SRC:-}
prefix=/opt/python3.14-tailcall
RECIPE=1
pkgs="clang llvm build-essential pkg-config dpkg-dev xz-utils zlib1g-dev libffi-dev libexpat1-dev libbz2-dev liblzma-dev"
case "$root" in /*) ;; *) root=$(pwd)/$root ;; esac
stamp="recipe $RECIPE mirror $mirror packages $pkgs src ${src:-debian}"

if [ $force = 0 ] && [ -f "$root/etc/ember-tailcall.stamp" ] &&
	[ "$(cat "$root/etc/ember-tailcall.stamp")" = "$stamp" ] &&
	[ -x "$root$prefix/bin/python3.14" ]; then
	echo "tailcall: $root$prefix/bin/python3.14 is current"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "tailcall: building needs root (mmdebstrap, chroot)" >&2
	exit 77
fi

# in_root CMD...: run CMD in ROOT with /proc and /dev, in a mount namespace
# of its own (nothing mounted reaches the caller's mount table).
in_root() {
	unshare -m --propagation private -- sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc"
		mount --rbind /dev "$r/dev"
		exec chroot "$r" "$@"' sh "$root" "$@"
}

start=$(date +%s)
if [ ! -x "$root/bin/sh" ] || [ $force = 1 ]; then
	command -v mmdebstrap >/dev/null 2>&1 ||
		{ echo "tailcall: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 69; }
	rm -rf "$root.build.$$"
	mkdir -p "$(dirname "$root")"
	echo "tailcall: mmdebstrap sid into $root ($pkgs)"
	timeout 1800 mmdebstrap --variant=apt \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--include="$(echo "$pkgs" | tr ' ' ',')" \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		sid "$root.build.$$" "deb $mirror sid main" "deb-src $mirror sid main"
	rm -rf "$root"
	mv "$root.build.$$" "$root"
fi

# The source: the tree at ROOT/src/cpython (made in ROOT/src.new, which
# replaces ROOT/src only once the source is there).
rm -rf "$root/src.new"
mkdir -p "$root/src.new/cpython"
if [ -n "$src" ]; then
	if [ -d "$src" ]; then
		cp -a "$src/." "$root/src.new/cpython/"
	else
		tar -xf "$src" -C "$root/src.new/cpython" --strip-components=1
	fi
else
	in_root sh -c 'cd /src.new && apt-get -q -o Acquire::Check-Valid-Until=false update >/dev/null &&
		apt-get -q source --download-only python3.14' ||
		{ echo "tailcall: the mirror serves no python3.14 source package; set EMBER_TAILCALL_SRC to a" \
			"CPython 3.14 source tree or tarball" >&2; rm -rf "$root/src.new"; exit 69; }
	tar -xf "$root"/src.new/python3.14_*.orig.tar.* -C "$root/src.new/cpython" --strip-components=1
fi
rm -rf "$root/src"
mv "$root/src.new" "$root/src"
version=$(sed -n 's/^#define PY_VERSION[ \t]*"\(.*\)"/\1/p' "$root/src/cpython/Include/patchlevel.h")
case "$version" in 3.14.*) ;; *) echo "tailcall: the source is CPython '$version', not 3.14" >&2; exit 65 ;; esac

echo "tailcall: building CPython $version with clang --with-tail-call-interp into $root$prefix"
in_root sh -c "cd /src/cpython &&
	CC=clang ./configure -q --prefix=$prefix --enable-shared --with-tail-call-interp \
		LDFLAGS=-Wl,-rpath,$prefix/lib >/src/configure.log 2>&1 &&
	grep -q '^#define Py_TAIL_CALL_INTERP 1' pyconfig.h &&
	nice make -s -j2 >/src/make.log 2>&1 &&
	make -s altinstall >/src/install.log 2>&1" ||
	{ echo "tailcall: the build failed: see $root/src/{configure,make,install}.log" >&2; exit 70; }

exe=$root$prefix/bin/python3.14
n=$(nm "$root$prefix/lib/libpython3.14.so.1.0" | grep -c ' _TAIL_CALL_' || true)
if [ "$n" -lt 100 ]; then
	echo "tailcall: the built libpython has $n _TAIL_CALL_ handlers: not a tail-calling build" >&2
	exit 70
fi
echo "$stamp" > "$root/etc/ember-tailcall.stamp"
echo "tailcall: CPython $version built in $(($(date +%s) - start)) s: $exe ($n handler functions)"
