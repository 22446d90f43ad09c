#!/bin/sh
# Install the Debian packages ember needs (only the missing ones).  As root it
# runs apt-get; otherwise it prints the exact command to run and fails.
#
# `install-deps.sh` (make build, make demo): what building ember and running
# the bundled demo need -- the compiler, CMake, the libraries' -dev packages,
# clang (the BPF programs) and libc's debug symbols.  `install-deps.sh test` (make test): the rest
# of what the test suite uses -- the Python interpreters' packages (NumPy,
# OpenCV, PyTorch, the debug build), the format validators' and the browser
# test's tools (Go, Node.js, chromium, the pinned npm packages), clang's
# fuzzing runtime.
#
# `install-deps.sh arm64`: what the aarch64 cross build and its tests under
# qemu-user need instead (make cross-arm64, make test-arm64; docs/arm64.md):
# Debian's cross compiler, the arm64 libraries through multiarch (adding the
# arm64 architecture to dpkg first) and qemu-user.  `install-deps.sh
# arm64-vm`: the host side of the emulated arm64 VM (make test-arm64-vm).
# `install-deps.sh sid`: what builds the Debian sid root and runs programs
# inside it (make sid-root, make test-sid): mmdebstrap, unshare and mount.
# `install-deps.sh compare`: Python and PyTorch for make compare-demo.
# `install-deps.sh package`: what makes the Debian package and tests it in a
# fresh Debian 12 root (make package, make package-test): dpkg-dev (its
# dpkg-shlibdeps computes the package's Depends), mmdebstrap and mount.
set -eu
cd "$(dirname "$0")/.."

# Install the Debian packages of $PKGS that are missing (as root), or print
# the command that would (otherwise, and fail).  $1 names the set in messages.
install_missing() {
	missing=""
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "ember: missing Debian packages$1; run as root:" >&2
		echo "  apt-get update && apt-get install -y$missing" >&2
		exit 1
	fi
	echo "ember: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

case "${1:-}" in
arm64)
	PKGS="clang pkg-config cmake qemu-user-static gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
libc6-dev:arm64 libstdc++6:arm64 libunwind-dev:arm64 libdw-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64
libbpf-dev:arm64"
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "ember: the arm64 architecture is not enabled; run as root:" >&2
			echo "  dpkg --add-architecture arm64 && apt-get update && apt-get install -y $(echo $PKGS)" >&2
			exit 1
		fi
		dpkg --add-architecture arm64
	fi
	install_missing " for the arm64 build"
	exit 0 ;;
arm64-vm)
	PKGS="qemu-system-arm qemu-user-static binfmt-support mmdebstrap arch-test qemu-utils e2fsprogs gcc-aarch64-linux-gnu"
	install_missing " for the arm64 VM"
	exit 0 ;;
sid)
	PKGS="mmdebstrap util-linux mount"
	install_missing " for the sid root"
	exit 0 ;;
compare)
	PKGS="python3 python3-numpy python3-torch"
	install_missing " for the FP32/INT8 comparison demo"
	exit 0 ;;
package)
	PKGS="dpkg-dev mmdebstrap util-linux mount"
	install_missing " for the Debian package and its test"
	exit 0 ;;
esac

# Building ember and the demo.  libc6-dbg: Debian's libc has no symbol table;
# without its debug file every thread's root frames (clone3, start_thread) and
# libc's string and math routines show as addresses.
PKGS="build-essential cmake pkg-config libunwind-dev libdw-dev libelf-dev zlib1g-dev libbpf-dev clang libc6-dbg"
install_missing ""
[ "${1:-}" = test ] || exit 0

# The test suite: interpreters and libraries it profiles, the consumers that
# check each output format, the fuzzers' runtime; xz-utils makes e2e.dbgsym's
# MiniDebugInfo section (libc6-dbg, above, is what its names come from);
# libcap2-bin's setcap gives e2e.setcap's copy of ember file capabilities;
# libomp-14-dev builds an OpenMP program on LLVM's runtime and
# libpthreadpool-dev one on pthreadpool (e2e.pools); zsh
# parses the zsh completion (e2e.completion); pytest runs NumPy's own
# linalg tests under ember (e2e.numpy_linalg); pandas reads diff's CSV as
# data scientists do (e2e.diff); man-db (with groff) renders the man pages
# (e2e.help_man, e2e.install); tmux is the terminal e2e.top reads ember top
# from; strace shows e2e.install that the installed ember opens nothing of
# the trees; python3-dev (Debian's 3.11 headers) and the cross compiler
# with its libc and qemu-user measure the Python offset tables
# (unit.python.offsets_table, its .aarch64 twin) -- installed here, as the
# arm64 step that also installs them comes after the tests that need them.
PKGS="libclang-rt-dev libomp-14-dev libpthreadpool-dev python3 python3.11-dbg python3-numpy python3-pytest libopenblas0-pthread python3-opencv python3-torch
xz-utils libcap2-bin zsh python3-pandas man-db golang-go chromium tmux strace python3-dev
gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static"
# Node.js: any recent one will do; install Debian's only when there is none.
command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
install_missing " for the tests"

# npm packages, pinned by package-lock.json, for the tests only.  npm's own
# error is shown (only errors: --loglevel=error), the first folder that
# fails stops the step, and one line says what to set when the registry
# cannot be reached.
for dir in tests/exporters tests/browser; do
	[ -f "$dir/package-lock.json" ] || continue
	if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
		echo "ember: npm ci in $dir" >&2
		if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error); then
			echo "ember: npm ci failed in $dir (npm's error above); if the registry is unreachable or a proxy's certificate is refused, set npm's registry, proxy or cafile (npm config set registry|https-proxy|cafile VALUE, or NPM_CONFIG_REGISTRY, NPM_CONFIG_HTTPS_PROXY, NPM_CONFIG_CAFILE) and run make deps-test again" >&2
			exit 1
		fi
		touch "$dir/node_modules"
	fi
done
