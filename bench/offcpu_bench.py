#!/usr/bin/env python3
"""What tracing context switches (`ember record --idle`) costs a target that
switches all the time: bench/targets/pingpong.c, two threads passing a byte
over pipes (two blocking reads per round trip), against the same target
unprofiled and under on-CPU sampling alone (`ember record`, same -F).
Settings run interleaved, in a shuffled order per round; the target times
its own rounds (CLOCK_MONOTONIC), so ember's start-up and symbolization are
not in the numbers.  Reported: median elapsed time per setting, the ratio of
medians to the unprofiled one, and the median of each round's own ratio
("paired"), plus what --idle recorded (off-CPU intervals, lost).

usage: offcpu_bench.py BUILD_DIR [--rounds N] [--trips N] [--freq HZ]
"""
import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trips", type=int, default=50000)
    ap.add_argument("--freq", type=int, default=99)
    a = ap.parse_args()
    ember = os.path.join(a.build, "ember")
    tmp = tempfile.mkdtemp(prefix="offcpu-bench-")
    target = os.path.join(tmp, "pingpong")
    r = sh(["cc", "-O2", "-pthread", os.path.join(HERE, "targets", "pingpong.c"), "-o", target])
    if r.returncode:
        sys.exit("building pingpong failed:\n" + r.stderr)
    out = os.path.join(tmp, "p.folded")
    settings = {
        "unprofiled": [],
        "on-CPU (-F %d)" % a.freq: [ember, "record", "-q", "-F", str(a.freq), "-o", out, "--"],
        "--idle (-F %d)" % a.freq: [ember, "record", "-F", str(a.freq), "--idle", "-o", out, "--"],
        "--idle --stack-size 8192": [ember, "record", "-F", str(a.freq), "--idle", "--stack-size", "8192",
                                     "-o", out, "--"],
    }
    times = {k: [] for k in settings}
    notes = []
    for rnd in range(a.rounds):
        order = list(settings)
        random.shuffle(order)
        for k in order:
            p = sh(settings[k] + [target, str(a.trips)])
            m = re.search(r"elapsed_s=([0-9.]+)", p.stdout)
            if p.returncode or not m:
                sys.exit("%s failed (%s):\n%s" % (k, p.returncode, p.stderr[-2000:]))
            times[k].append(float(m.group(1)))
            if k.startswith("--idle"):
                w = re.search(r"wall-clock profile: ([0-9.]+) s on CPU .*, ([0-9.]+) s off CPU", p.stderr)
                ln = re.search(r"--idle: .*", p.stderr)
                notes.append("round %d, %s: %s%s" % (rnd, k, w.group(0) if w else "(no split line)",
                                                  "; " + ln.group(0) if ln else ""))
    base = statistics.median(times["unprofiled"])
    print("pingpong, %d round trips (%d blocking reads), %d rounds, uname %s"
          % (a.trips, 2 * a.trips, a.rounds, os.uname().release))
    print()
    print("| setting | median s | min s | ratio of medians | paired ratio (median) | us per round trip |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, v in times.items():
        paired = statistics.median(x / y for x, y in zip(v, times["unprofiled"]))
        med = statistics.median(v)
        print("| %s | %.3f | %.3f | %.2f | %.2f | %.1f |" % (k, med, min(v), med / base, paired,
                                                             med / a.trips * 1e6))
    print()
    for n in notes:
        print("- " + n)


main()
