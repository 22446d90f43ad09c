#!/bin/sh
# `make test-arm64-vm`: boot the cached Debian 12 arm64 guest under
# qemu-system-aarch64 (TCG: -M virt -cpu cortex-a76) and run guest-test.py in
# it against an aarch64 ember and the aarch64 test targets.
#
#   sh tests/arm64-vm/run.sh [--ember PATH] [--targets DIR] [--out DIR]
#
# --ember    aarch64 ember (default build-arm64/ember)
# --targets  aarch64 test targets (default build-arm64/tests/targets); any of
#            chain / heartbeat / omp_stages missing there is compiled here with
#            aarch64-linux-gnu-gcc and the flags of tests/targets
# --out      where the share, console log and report stay (default
#            $EMBER_ARM64_VM_CACHE/last-run)
# --deb      the arm64 Debian package (make package-arm64) for the guest's
#            package check, which skips without it
# Environment: EMBER_ARM64_VM_CACHE (image cache), EMBER_ARM64_VM_TIMEOUT
# (seconds for the whole VM run, default 1800), EMBER_ARM64_VM_SMP (2),
# EMBER_ARM64_VM_MEM (MiB, 2048), EMBER_ARM64_VM_ONLY (comma-separated check
# names to run, default all), EMBER_ARM64_VM_CPU (qemu's -cpu, cortex-a76;
# `max` has pointer authentication, so return addresses are signed).
# Exit status: the guest test's (0 all passed or skipped, 1 a check failed),
# 2 when the VM gave no result (boot failure, timeout: see console.log).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${EMBER_ARM64_VM_CACHE:-$HOME/.cache/ember/arm64-vm}
ember=$repo/build-arm64/ember
targets=$repo/build-arm64/tests/targets
out=$cache/last-run
deb=
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift 2 ;;
	--targets) targets=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--deb) deb=$2; shift 2 ;;
	*) echo "usage: run.sh [--ember PATH] [--targets DIR] [--out DIR] [--deb PATH]" >&2; exit 64 ;;
	esac
done

for f in root.img vmlinuz initrd.img; do
	[ -f "$cache/$f" ] || { echo "arm64-vm: no $cache/$f: run make arm64-vm-image" >&2; exit 66; }
done
[ -x "$ember" ] || { echo "arm64-vm: no aarch64 ember at $ember (make cross-arm64)" >&2; exit 66; }

start=$(date +%s)
# Only a directory of an earlier run (or an empty one) is replaced.
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -f "$out/.arm64-vm-run" ]; then
	echo "arm64-vm: $out is not empty and not an earlier run's: choose another --out" >&2
	exit 64
fi
rm -rf "$out"
share=$out/share
mkdir -p "$share/targets" "$share/out"
: > "$out/.arm64-vm-run"
cp "$ember" "$share/ember"
cp "$here/vm-init.sh" "$here/guest-test.py" "$repo/tests/e2e/emberlib.py" "$repo/tests/python/pool_stages.py" "$share/"
if [ -n "$deb" ]; then
	[ -f "$deb" ] || { echo "arm64-vm: no package at $deb (make package-arm64)" >&2; exit 66; }
	cp "$deb" "$share/"
fi
printf '%s\n' "${EMBER_ARM64_VM_ONLY:-}" > "$share/only"
for t in chain heartbeat omp_stages; do
	if [ -x "$targets/$t" ]; then
		cp "$targets/$t" "$share/targets/"
	else
		echo "arm64-vm: $t not in $targets: compiling it with aarch64-linux-gnu-gcc"
		aarch64-linux-gnu-gcc -O2 -g -fomit-frame-pointer -Wall -Wextra -std=gnu11 -pthread -fopenmp \
			-o "$share/targets/$t" "$repo/tests/targets/$t.c" -lm
	fi
done

qemu-img create -q -f qcow2 -F raw -b "$cache/root.img" "$out/overlay.qcow2"
rm -f "$share/status" "$share/report.txt"
limit=${EMBER_ARM64_VM_TIMEOUT:-1800}
# The guest's own limit leaves time for booting and powering off.
echo $((limit > 400 ? limit - 180 : limit / 2)) > "$share/guest-timeout"
echo "arm64-vm: booting (kernel $(cat "$cache/kernel-version" 2>/dev/null || echo ?), limit ${limit}s); console: $out/console.log"
set +e
timeout --kill-after=10 "$limit" qemu-system-aarch64 \
	-M virt -cpu "${EMBER_ARM64_VM_CPU:-cortex-a76}" -smp "${EMBER_ARM64_VM_SMP:-2}" -m "${EMBER_ARM64_VM_MEM:-2048}" \
	-nographic -no-reboot \
	-kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" \
	-append "root=/dev/vda rw rootwait console=ttyAMA0 panic=-1 init=/sbin/ember-vm-init" \
	-drive file="$out/overlay.qcow2",if=virtio,format=qcow2 \
	-virtfs local,path="$share",mount_tag=share,security_model=none,id=share \
	-nic none \
	</dev/null >"$out/console.log" 2>&1
qrc=$?
set -e
took=$(($(date +%s) - start))
rm -f "$out/overlay.qcow2"

if [ -f "$share/report.txt" ]; then
	cat "$share/report.txt"
fi
if [ ! -f "$share/status" ]; then
	[ $qrc = 124 ] && why="timed out after ${limit}s" || why="qemu exit status $qrc"
	echo "arm64-vm: FAIL: the VM gave no result ($why); last console lines:"
	tail -n 25 "$out/console.log"
	exit 2
fi
status=$(cat "$share/status")
boot=$(sed -n 's/^boot_seconds=//p' "$share/times" 2>/dev/null || echo "?")
echo "arm64-vm: guest test exit status $status; whole run ${took}s (kernel to test start ${boot}s); files in $out"
[ "$status" = 0 ] || exit 1
