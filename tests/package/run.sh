#!/bin/sh
# The Debian package, installed and used on a clean Debian 12 system
# (`make package-test`; docs/install.md):
#
#   sh tests/package/run.sh [BUILD]
#
# BUILD (default build) holds the package `make package` made,
# ember_<version>_<arch>.deb for this machine's architecture, the build the
# package was made from (its install rules are the truth for the file list)
# and the test target tests/targets/chain.
#
# A fresh bookworm root (mmdebstrap, variant apt, plus python3; from
# $EMBER_PACKAGE_MIRROR, default deb.debian.org) is made in a temporary
# directory every run -- never cached: the point is a system that has seen
# nothing but Debian.  Inside it, by chroot, with /proc, /sys and /dev
# mounted (perf events and BPF need the first two: libbpf reads the kernel's
# BTF from /sys/kernel/btf/vmlinux for the copier's tp_btf program):
#   - `apt-get install ./ember_*.deb` resolves the Depends from the archive;
#   - `dpkg -L ember` lists exactly the files `cmake --install` installs
#     (the man pages gzip'ed);
#   - `ember --version` prints the package's version, and the BPF frame
#     copier built in;
#   - the installed bash completion, sourced by bash, completes ember;
#   - `ember record` of a native program (chain: main -> a -> b -> hot)
#     puts most samples in hot under a;b, and `ember report` of that
#     profile names hot;
#   - `ember record` of python3 (bookworm's 3.11) writes pstats that
#     Python's own pstats loads, naming the script's function, and folded
#     stacks where that function sits above zlib's native frames (Python
#     frames merged into native stacks), with the frames copied by the
#     BPF program at the sample;
#   - `apt-get remove ember` leaves none of its files, and after
#     `apt-get autoremove --purge` the root holds the same files as before
#     the install (dpkg's and apt's own state, logs and caches aside,
#     and root's ~/.cache, where those runs keep their symbol cache).
# Mounts and the root are removed on every way out.  Prints the time of each
# step and the total.  Needs root (exit 77 otherwise) and mmdebstrap.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
mirror=${EMBER_PACKAGE_MIRROR:-http://deb.debian.org/debian}
case "$build" in /*) ;; *) build=$(pwd)/$build ;; esac

if [ "$(id -u)" != 0 ]; then
	echo "package-test: needs root (mmdebstrap, chroot, mount)" >&2
	exit 77
fi
for tool in mmdebstrap chroot mount dpkg-deb cmake; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "package-test: $tool is missing: sh scripts/install-deps.sh package" >&2
		exit 69
	fi
done
arch=$(dpkg --print-architecture)
set -- "$build"/ember_*_"$arch".deb
if [ $# != 1 ] || [ ! -f "$1" ]; then
	echo "package-test: want exactly one $build/ember_*_$arch.deb (make package), found: $*" >&2
	exit 66
fi
deb=$1
chain=$build/tests/targets/chain
if [ ! -x "$chain" ]; then
	echo "package-test: no test target $chain (build $build first)" >&2
	exit 66
fi

start=$(date +%s)
tmp=$(mktemp -d /tmp/ember-package-test.XXXXXX)
root=$tmp/root
mounts=""
# Unmount what this script mounted, newest first, then delete the
# temporary directory -- never through a mount left behind.
cleanup() {
	rc=$?
	for m in $mounts; do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
	if grep -q " $tmp/" /proc/mounts; then
		echo "package-test: $tmp still has mounts; left in place" >&2
	else
		rm -rf "$tmp"
	fi
	echo "package-test: total $(($(date +%s) - start)) s"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

step_start=$start
step() {
	now=$(date +%s)
	echo "package-test: $1 ($((now - step_start)) s)"
	step_start=$now
}
failures=0
check() {   # check STATUS WHAT [FILE shown on failure]
	if [ "$1" = 0 ]; then
		echo "package-test: ok   $2"
	else
		echo "package-test: FAIL $2" >&2
		if [ -n "${3:-}" ] && [ -s "$3" ]; then tail -40 "$3" | sed 's/^/    /' >&2; fi
		failures=$((failures + 1))
	fi
}
run_check() {   # run_check WHAT LOG COMMAND...: COMMAND's output into LOG
	what=$1 log=$2
	shift 2
	rc=0
	"$@" >"$log" 2>&1 || rc=$?
	check $rc "$what" "$log"
}
inroot() {
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
# In the scratch directory of the root, as a shell command line.
intest() {
	inroot sh -c "cd /tmp/ember-test && $1"
}

# dpkg -L against the install rules, and every listed file present.
check_files() {
	inroot dpkg -L ember | while read -r f; do
		[ -d "$root$f" ] || echo "$f"
	done | sort >"$tmp/listed"
	rc=0
	diff -u "$tmp/expected" "$tmp/listed" >"$tmp/list.diff" || rc=$?
	check $rc "dpkg -L ember lists exactly the installed files: $(tr '\n' ' ' <"$tmp/listed")" "$tmp/list.diff"
	rc=0
	while read -r f; do
		[ -e "$root$f" ] || { echo "missing $f"; rc=1; }
	done <"$tmp/listed" >"$tmp/missing"
	check $rc "every listed file is in the root" "$tmp/missing"
}

# The version on the first line, and the BPF programs built in.
check_version() {
	inroot ember --version >"$tmp/version" 2>&1 || true
	got=$(head -1 "$tmp/version")
	rc=0
	[ "$got" = "ember $version" ] || rc=1
	check $rc "ember --version prints 'ember $version' first (got '$got')" "$tmp/version"
	rc=0
	grep -q '^Python frame copier (BPF): built in$' "$tmp/version" || rc=1
	check $rc "ember --version: the Python frame copier is built in" "$tmp/version"
}

# The bash completion where bash-completion loads it from, when installed.
check_completion() {
	f=/usr/share/bash-completion/completions/ember
	if ! grep -qx "$f" "$tmp/expected"; then
		echo "package-test: SKIP the bash completion: the install rules do not install $f"
		return 0
	fi
	got=$(inroot bash -c ". $f && complete -p ember" 2>&1 || true)
	rc=0
	case "$got" in "complete "*" ember") ;; *) rc=1 ;; esac
	check $rc "bash: sourcing $f registers ember's completion ($got)"
}

# chain spins in hot (under main;a;b) for 1 s of CPU time: most samples
# are there (its start and exit are a few ms).
check_native() {
	run_check "ember record -o chain.folded -- ./chain 1" "$tmp/native.log" \
		intest "ember record -o chain.folded -- ./chain 1"
	f=$work/chain.folded
	total=$(awk '{n += $NF} END {print n + 0}' "$f" 2>/dev/null || echo 0)
	inhot=$(awk '/(^|;)main;a;b;hot(;|$| )/ {n += $NF} END {print n + 0}' "$f" 2>/dev/null || echo 0)
	rc=0
	[ "$total" -ge 50 ] && [ $((inhot * 100)) -ge $((total * 80)) ] || rc=1
	check $rc "chain: $inhot of $total samples in main;a;b;hot (>= 80%, >= 50 samples)" "$tmp/native.log"
	run_check "ember report chain.folded" "$tmp/report.log" intest "ember report chain.folded --top 0"
	rc=0
	grep -q ' hot$' "$tmp/report.log" || rc=1
	check $rc "ember report names hot" "$tmp/report.log"
}

# squeeze.py: squeeze() calls zlib.compress for ~1 s of CPU time.
check_python() {
	run_check "ember record -o py.pstats -o py.folded -- python3 squeeze.py" "$tmp/py.log" \
		intest "ember record -o py.pstats -o py.folded -- python3 squeeze.py"
	rc=0
	intest "python3 -c \"import pstats, sys
s = pstats.Stats('py.pstats')
hits = [(k, v) for k, v in s.stats.items() if k[0].endswith('squeeze.py') and k[2] == 'squeeze']
print(hits)
sys.exit(0 if hits and hits[0][1][3] > 0 else 1)\"" >"$tmp/pstats.log" 2>&1 || rc=$?
	check $rc "python3's pstats loads py.pstats and finds squeeze (squeeze.py) with time in it" "$tmp/pstats.log"
	f=$work/py.folded
	total=$(awk '{n += $NF} END {print n + 0}' "$f" 2>/dev/null || echo 0)
	merged=$(awk '/squeeze \(squeeze\.py:[0-9]+\);(.*;)?(zlib_compress|deflate)/ {n += $NF} END {print n + 0}' \
		"$f" 2>/dev/null || echo 0)
	rc=0
	[ "$total" -ge 30 ] && [ $((merged * 100)) -ge $((total * 60)) ] || rc=1
	check $rc "python: $merged of $total samples have squeeze (squeeze.py) above zlib's native frames (>= 60%)" \
		"$f"
	line=$(grep 'copied by the kernel at the sample (BPF)' "$tmp/py.log" || true)
	copied=$(echo "$line" | sed -n 's/.* for \([0-9]*\) of \([0-9]*\) reads.*/\1 \2/p')
	rc=1
	if [ -n "$copied" ]; then
		set -- $copied
		[ $(($1 * 100)) -ge $(($2 * 80)) ] && rc=0
	fi
	check $rc "the BPF copier copied the Python frames (${line#ember: })" "$tmp/py.log"
	n=$(ls "$root/root/.cache/ember/symbols" 2>/dev/null | wc -l)
	rc=0
	[ "$n" -gt 0 ] || rc=1
	check $rc "the runs as root keep their symbol cache in ~/.cache/ember/symbols ($n entries)"
}

# apt-get remove takes every file of ember's; autoremove --purge of the
# libraries it pulled in gives back the root as it was.
check_removal() {
	run_check "apt-get remove -y ember" "$tmp/remove.log" inroot apt-get remove -y ember
	rc=0
	while read -r f; do
		if [ -e "$root$f" ] || [ -L "$root$f" ]; then echo "left behind: $f"; rc=1; fi
	done <"$tmp/expected" >"$tmp/left"
	status=$(inroot dpkg-query -W -f='${db:Status-Abbrev}' ember 2>/dev/null || echo unknown)
	case "$status" in ?i*) echo "dpkg still has ember installed: $status" >>"$tmp/left"; rc=1 ;; esac
	check $rc "apt-get remove leaves none of ember's files (dpkg status '$status')" "$tmp/left"
	run_check "apt-get autoremove --purge -y" "$tmp/autoremove.log" inroot apt-get autoremove --purge -y
	rm -rf "$work"
	snapshot >"$tmp/after"
	rc=0
	diff -u "$tmp/before" "$tmp/after" >"$tmp/state.diff" || rc=$?
	check $rc "after autoremove --purge the root holds the files it held before the install" "$tmp/state.diff"
}

# The archive's Release file may be past its Valid-Until (a frozen mirror):
# its dates are not checked, here and by apt inside the root (mmdebstrap
# keeps these options there).  The package lists stay, so that apt in the
# root resolves ember's Depends without an update.  (timeout --foreground:
# mmdebstrap stays in this script's process group, so ^C stops it too.)
echo "package-test: mmdebstrap bookworm ($arch, variant apt, python3) from $mirror into $root"
timeout --foreground 1800 mmdebstrap --variant=apt --architectures="$arch" --include=python3 \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--aptopt='Acquire::Check-Date "false"' \
	--skip=cleanup/apt/lists \
	bookworm "$root" "deb $mirror bookworm main" >"$tmp/mmdebstrap.log" 2>&1 || {
	tail -20 "$tmp/mmdebstrap.log" >&2
	echo "package-test: mmdebstrap failed" >&2
	exit 1
}
step "root built: $(du -sm "$root" | cut -f1) MiB"

for m in proc sys dev; do
	case $m in
	proc) mount -t proc proc "$root/proc" ;;
	*) mount --bind "/$m" "$root/$m" ;;
	esac
	mounts="$root/$m $mounts"
done

# What the install rules install: the file list the package must match
# (its man pages gzip'ed: cmake/package_man.cmake).
DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr >/dev/null
(cd "$tmp/stage" && find . ! -type d) |
	sed -e 's/^\.//' -e 's|^\(/usr/share/man/man[1-9]/.*\.[1-9]\)$|\1.gz|' | sort >"$tmp/expected"

# The root's files (dpkg's and apt's own state, logs, caches, the test's
# scratch directory and Python's byte code aside; and root's ~/.cache, where
# the test's runs of ember keep their symbol cache: a user's data, which a
# purge leaves as it leaves any user's files).
snapshot() {
	inroot find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /run \
		-o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
		-o -path /root/.cache \
		-o -name __pycache__ \) -prune -o -print | sort
}
snapshot >"$tmp/before"

work=$root/tmp/ember-test
mkdir -p "$work"
cp "$deb" "$work/"
cp "$chain" "$work/chain"
cp "$here/squeeze.py" "$work/squeeze.py"
debname=$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)

run_check "apt-get install ./$debname (Depends resolved from the archive)" "$tmp/install.log" \
	inroot apt-get install -y "/tmp/ember-test/$debname"
echo "package-test: installed: $(sed -n 's/^Setting up \([^ ]*\) .*/\1/p' "$tmp/install.log" | tr '\n' ' ')"
step "installed"

check_files
check_version
check_completion
check_native
check_python
step "ember checked"

check_removal
step "removed"

if [ $failures != 0 ]; then
	echo "package-test: $failures check(s) failed" >&2
	exit 1
fi
echo "package-test: all checks passed"
