#!/bin/sh
# Run inside the arm64 guest by /sbin/ember-vm-init (guest-init.sh) with the
# host's share mounted at /mnt/share: prepares what a profiler needs (debugfs,
# tracefs, the BPF file system, perf_event settings), runs guest-test.py with
# a time limit, and leaves report.txt, status and times in the share.
share=/mnt/share
read up _ < /proc/uptime
echo "boot_seconds=$up" > $share/times
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid
echo 0 > /proc/sys/kernel/kptr_restrict
hostname ember-arm64
limit=$(cat $share/guest-timeout 2>/dev/null || echo 1500)
cd /tmp
timeout --kill-after=5 "$limit" python3 -u $share/guest-test.py \
	--ember $share/ember --targets $share/targets > $share/report.txt 2>&1
echo $? > $share/status
read up _ < /proc/uptime
echo "end_seconds=$up" >> $share/times
dmesg > $share/dmesg.txt 2>/dev/null
