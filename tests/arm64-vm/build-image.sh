#!/bin/sh
# Build (or reuse) the cached Debian 12 arm64 guest for `make test-arm64-vm`:
# a root file system made by mmdebstrap from deb.debian.org (packages.txt),
# written into an ext4 image with mke2fs -d (no loop mount), and the kernel
# and initrd of that root copied beside it for qemu's -kernel/-initrd.
#
#   sh tests/arm64-vm/build-image.sh         build unless the cache is current
#   sh tests/arm64-vm/build-image.sh --force rebuild
#
# Cache: $EMBER_ARM64_VM_CACHE, default $HOME/.cache/ember/arm64-vm.  The
# image is rebuilt only when packages.txt, guest-init.sh or RECIPE below
# change (their hash is stored in the cache as "stamp"): bump RECIPE with any
# change to this script that changes the image.
# Needs root (mmdebstrap of a foreign architecture, binfmt_misc).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${EMBER_ARM64_VM_CACHE:-$HOME/.cache/ember/arm64-vm}
mirror=${EMBER_ARM64_VM_MIRROR:-http://deb.debian.org/debian}
force=0
RECIPE=1
[ "${1:-}" = "--force" ] && force=1

stamp=$( (echo "recipe $RECIPE mirror $mirror"; cat "$here/packages.txt" "$here/guest-init.sh") |
	sha256sum | cut -d' ' -f1)
if [ $force = 0 ] && [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp" ] &&
	[ -f "$cache/root.img" ] && [ -f "$cache/vmlinuz" ] && [ -f "$cache/initrd.img" ]; then
	echo "arm64-vm: cached image is current ($cache)"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "arm64-vm: building the image needs root (mmdebstrap, binfmt_misc)" >&2
	exit 77
fi
sh "$here/host-setup.sh"

start=$(date +%s)
mkdir -p "$cache"
work="$cache/build.$$"
rm -rf "$work"
mkdir -p "$work"
# Never delete through a mount a failed mmdebstrap may have left behind.
trap 'grep -q " $work/" /proc/mounts || rm -rf "$work"' EXIT

pkgs=$(sed -e 's/#.*//' "$here/packages.txt" | tr -s ' \n' ',,' | sed -e 's/^,//' -e 's/,$//')

# The initrd needs only what finds the root on a virtio disk; the 9p share
# is loaded from the root later.  A hook of our own (not the package's
# conffile) lists those modules, so mkinitramfs under qemu-user stays short.
hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools/hooks" &&
printf "MODULES=list\nCOMPRESS=gzip\n" > "$1/etc/initramfs-tools/conf.d/ember-vm" &&
printf "#!/bin/sh\n[ \"\$1\" = prereqs ] && exit 0\n. /usr/share/initramfs-tools/hook-functions\nfor m in virtio_mmio virtio_pci virtio_blk ext4 crc32c_generic; do force_load \$m; done\n" \
	> "$1/etc/initramfs-tools/hooks/ember-vm" &&
chmod 755 "$1/etc/initramfs-tools/hooks/ember-vm"'

echo "arm64-vm: mmdebstrap bookworm arm64 ($pkgs)"
timeout 3600 mmdebstrap --arch=arm64 --variant=minbase \
	--include="$pkgs" \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	--essential-hook="$hook" \
	--customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
	bookworm "$work/root" "deb $mirror bookworm main"

root="$work/root"
install -m 755 "$here/guest-init.sh" "$root/sbin/ember-vm-init"
mkdir -p "$root/mnt/share"
echo ember-arm64 > "$root/etc/hostname"
printf '/dev/vda / ext4 rw 0 1\n' > "$root/etc/fstab"

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"

# Size: the root plus room for the test's scratch files.
used=$(du -sm "$root" | cut -f1)
size=$((used + used / 4 + 768))
echo "arm64-vm: mke2fs -d, ${size} MiB (root ${used} MiB)"
mke2fs -q -t ext4 -L emberroot -d "$root" "$work/root.img" "${size}M"

rm -rf "$root"
mv "$work/root.img" "$work/vmlinuz" "$work/initrd.img" "$cache/"
basename "$kernel" | sed 's/^vmlinuz-//' > "$cache/kernel-version"
echo "$stamp" > "$cache/stamp"
took=$(($(date +%s) - start))
echo "$took" > "$cache/build-seconds"
echo "arm64-vm: image built in ${took}s: $cache/root.img (kernel $(cat "$cache/kernel-version"))"
