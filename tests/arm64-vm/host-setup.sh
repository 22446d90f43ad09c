#!/bin/sh
# Host side of the arm64 VM test: the Debian 12 packages it needs and
# binfmt_misc for running arm64 programs while mmdebstrap builds the root.
# Idempotent; installs only what is missing.  Needs root for any change.
set -eu

sh "$(dirname "$0")/../../scripts/install-deps.sh" arm64-vm

if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
	mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
	update-binfmts --enable qemu-aarch64 || update-binfmts --enable
fi
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || {
	echo "arm64-vm: binfmt_misc has no qemu-aarch64 entry" >&2
	exit 71
}
