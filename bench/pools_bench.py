#!/usr/bin/env python3
"""What putting pool threads' samples under their dispatcher costs
(docs/pools.md): tests/python/pool_stages.py (NumPy on OpenBLAS's threads,
PyTorch on OpenMP's, two each, and pure Python) unprofiled, under `ember
record` (attribution on, the default) and under `ember record
--no-attribution`, interleaved, in a shuffled order per round.

- the target: the CPU each round of its stages took (every thread's own
  clock summed, over the rounds it ran in the time given; the script
  measures it itself: ember's start-up and symbolization are not in it),
  median per setting and the median of each run's own ratio to the
  unprofiled run of its round ("paired");
- the hot path: ember's CPU per sample while sampling (its summary), with
  attribution against without; with EMBER_BPF_STATS the frame copier's
  runs in the target and their mean time (the peer copies at the workers'
  samples are new runs of it);
- at the end: the CPU ember took to resolve the run into a profile (the
  summary's "symbolization" figure, which holds the attribution), with
  against without.

usage: pools_bench.py BUILD_DIR [--rounds N] [--seconds S] [--freq HZ]
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "tests", "python", "pool_stages.py")
PY = "/usr/bin/python3"


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env)
    m = re.search(r"^TRUTH (.*)$", p.stdout, re.M)
    if p.returncode or not m:
        sys.exit("%s failed (%s):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    t = json.loads(m.group(1))
    got = {"loop_cpu": t["loop"] / max(t["rounds"], 1) * 1e3}   # CPU ms per round of the stages
    s = re.search(r"(\d+) samples, \d+ lost.*profiler CPU ([\d.]+) us/sample.*symbolization ([\d.]+) ms CPU",
                  p.stderr)
    if s:
        got.update(samples=int(s.group(1)), per_sample_us=float(s.group(2)), resolve_ms=float(s.group(3)))
    b = re.search(r"BPF frame copier: (\d+) runs in the target, ([\d.]+) us each", p.stderr)
    if b:
        got.update(copier_runs=int(b.group(1)), copier_us=float(b.group(2)))
    return got


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--freq", type=int, default=99)
    a = ap.parse_args()
    ember = os.path.join(a.build, "ember")
    out = os.path.join(tempfile.mkdtemp(prefix="pools-bench-"), "p.folded")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "OPENBLAS_", "GOMP_"))}
    env.update(OPENBLAS_NUM_THREADS="2", EMBER_BPF_STATS="1")
    target = [PY, SCRIPT, str(a.seconds), "blas", "torch", "python"]
    settings = {
        "unprofiled": target,
        "ember (attribution)": [ember, "record", "-F", str(a.freq), "-o", out, "--"] + target,
        "ember --no-attribution": [ember, "record", "-F", str(a.freq), "--no-attribution", "-o", out, "--"] + target,
    }
    got = {k: [] for k in settings}
    for _ in range(a.rounds):
        order = list(settings)
        random.shuffle(order)
        for k in order:
            got[k].append(run(settings[k], env))
    base = got["unprofiled"]
    print("pool_stages.py (blas, torch, python; OPENBLAS_NUM_THREADS=2, torch.set_num_threads(2)), %g s a run, "
          "-F %d, %d rounds, uname %s" % (a.seconds, a.freq, a.rounds, os.uname().release))
    print()
    print("| setting | CPU ms a round (median) | paired ratio to unprofiled | ember CPU per sample us | "
          "resolve ms | copier runs | copier us a run |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, rs in got.items():
        paired = med([r["loop_cpu"] / b["loop_cpu"] for r, b in zip(rs, base)])
        print("| %s | %.3f | %.3f | %s | %s | %s | %s |" % (
            k, med([r["loop_cpu"] for r in rs]), paired,
            "%.1f" % med([r["per_sample_us"] for r in rs]) if "per_sample_us" in rs[0] else "",
            "%.0f" % med([r["resolve_ms"] for r in rs]) if "resolve_ms" in rs[0] else "",
            "%d" % med([r["copier_runs"] for r in rs]) if "copier_runs" in rs[0] else "",
            "%.2f" % med([r["copier_us"] for r in rs]) if "copier_us" in rs[0] else ""))
    on, off = got["ember (attribution)"], got["ember --no-attribution"]
    print()
    print("paired, attribution against --no-attribution: CPU a round %.3f, ember CPU per sample %.3f, resolve %.3f" % (
        med([x["loop_cpu"] / y["loop_cpu"] for x, y in zip(on, off)]),
        med([x["per_sample_us"] / y["per_sample_us"] for x, y in zip(on, off)]),
        med([x["resolve_ms"] / y["resolve_ms"] for x, y in zip(on, off)])))


main()
