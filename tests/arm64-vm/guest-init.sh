#!/bin/sh
# init= of the arm64 test guest (installed in the image as /sbin/ember-vm-init).
# Kept small so the image rarely changes: mount the basics and the host's
# 9p share at /mnt/share, run the share's vm-init.sh (copied there from the
# repository on every run), then power the machine off.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -o remount,rw /
modprobe -q 9pnet_virtio
modprobe -q 9p
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /mnt/share; then
	if [ -f /mnt/share/vm-init.sh ]; then
		/bin/sh /mnt/share/vm-init.sh
	else
		echo "ember-vm-init: the share has no vm-init.sh"
	fi
	sync
	umount /mnt/share
else
	echo "ember-vm-init: cannot mount the 9p share"
fi
sync
echo o > /proc/sysrq-trigger
while :; do sleep 60; done
