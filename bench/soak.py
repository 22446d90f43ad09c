#!/usr/bin/python3
"""Soak: ember record on a long run, its memory over time.

    python3 bench/soak.py BUILD_DIR [--seconds 600] [--hz 999] [--threads 4]

Records a multi-threaded Python target (threads in zlib, which lets go of
the GIL, and in Python code of varying depth, so stacks keep being new for
a while) with `ember record -F HZ` for SECONDS, and reads ember's memory
from /proc/PID/status every few seconds: VmRSS and its parts (anonymous,
file, shared: the perf rings are shared memory), and VmHWM at the end.
Prints a table over time, the growth of RSS over the second half of the
run (MB per minute), ember's summary (samples, lost), and a verdict for
each goal: peak RSS <= 64 MB, flat memory (<= 1 MB/min over the second
half), 0 samples lost.  A benchmark: it exits 0 whatever the numbers, 1
when ember fails.  `make soak` runs it for 10 minutes.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

TARGET = r'''
import sys, threading, time, zlib
seconds = float(sys.argv[1]); nthreads = int(sys.argv[2])
deadline = time.time() + seconds
data = bytes(range(256)) * 4096

def squeeze(level):
    while time.time() < deadline:
        zlib.decompress(zlib.compress(data, level))

def depth(n, k):
    if n == 0:
        x = 0
        for i in range(k):
            x += i * i % 7
        return x
    return depth(n - 1, k)

def climb(seed):
    i = seed
    while time.time() < deadline:
        depth(i % 40, 3000)
        i += 1

kinds = [lambda: squeeze(6), lambda: climb(0), lambda: squeeze(1), lambda: climb(17)]
ts = [threading.Thread(target=kinds[i % 4], name="soak-%d" % i) for i in range(nthreads)]
for t in ts: t.start()
for t in ts: t.join()
'''

FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM")


def status_kb(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in FIELDS:
                    out[k] = int(v.split()[0])
    except OSError:
        return None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--every", type=float, default=5.0, help="seconds between memory readings")
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()

    ember = os.path.join(args.build_dir, "ember")
    tmp = tempfile.mkdtemp(prefix="ember-soak-")
    target = os.path.join(tmp, "soak_target.py")
    with open(target, "w") as f:
        f.write(TARGET)
    out = os.path.join(tmp, "soak.ember")
    argv = [ember, "record", "-F", str(args.hz), "-o", out, "--", args.python, target,
            str(args.seconds), str(args.threads)]
    print("soak: %s" % " ".join(argv), flush=True)
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    rows = []
    while p.poll() is None:
        time.sleep(args.every)
        m = status_kb(p.pid)
        if m and "VmRSS" in m:
            rows.append((time.monotonic() - t0, m))
            print("  %6.0f s  RSS %7.1f MB (anon %6.1f, file %5.1f, shared %6.1f)" % (
                rows[-1][0], m["VmRSS"] / 1024, m.get("RssAnon", 0) / 1024, m.get("RssFile", 0) / 1024,
                m.get("RssShmem", 0) / 1024), flush=True)
    err = p.stderr.read()
    if p.returncode != 0:
        print("soak: ember exited %d:\n%s" % (p.returncode, err[-3000:]))
        sys.exit(1)
    s = re.search(r"ember: (\d+) samples, (\d+) lost", err)
    samples, lost = (int(s.group(1)), int(s.group(2))) if s else (0, -1)
    hwm = max((r[1].get("VmHWM", 0) for r in rows), default=0) / 1024
    peak = max((r[1]["VmRSS"] for r in rows), default=0) / 1024
    half = [r for r in rows if r[0] >= rows[-1][0] / 2] if rows else []
    slope = 0.0
    if len(half) >= 2 and half[-1][0] > half[0][0]:
        slope = (half[-1][1]["VmRSS"] - half[0][1]["VmRSS"]) / 1024 / ((half[-1][0] - half[0][0]) / 60)
    print("\nsoak: %.0f s at -F %d, %d threads: %d samples, %d lost; RSS peak %.1f MB (VmHWM %.1f MB), "
          "second half %+.2f MB/min" % (args.seconds, args.hz, args.threads, samples, lost, peak, hwm, slope))
    for line in err.splitlines():
        if line.startswith("ember: ") and ("samples" in line or "Python" in line):
            print("  " + line)
    print("- peak RSS <= 64 MB: %s (%.1f MB)" % ("MET" if hwm <= 64 else "NOT MET", hwm))
    print("- flat memory (<= 1 MB/min over the second half): %s (%+.2f MB/min)" % (
        "MET" if slope <= 1 else "NOT MET", slope))
    print("- 0 samples lost: %s (%d)" % ("MET" if lost == 0 else "NOT MET", lost))
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
