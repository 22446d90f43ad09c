#!/usr/bin/env python3
"""Python merging: attribution accuracy, mismatch rate, cost of a Python stack
read, and target slowdown with merging on.  Standard library only.

usage: python_bench.py BUILD_DIR [--seconds S] [--rounds N]

- accuracy: tests/e2e/py/native_calls.py (four Python functions, each calling
  its own native hot function: cv::GaussianBlur, cv::Canny, BLAS dgemm, zlib
  deflate) at -F 999; share of those native samples whose nearest Python frame
  is the right caller, and the mismatch rate ember reports;
- read cost: a 20-deep Python recursion burning at the bottom, -F 999; the
  mean time of a Python stack read from ember's summary;
- slowdown: bench/targets/loop.py unprofiled vs `ember record -F 99` (merging
  on), interleaved rounds, the loop's own CPU time.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")
DEEP = r'''
import sys, time
def level(n, deadline):
    if n > 1:
        return level(n - 1, deadline)
    x = 0
    while time.time() < deadline:
        for i in range(2000):
            x += i
    return x
level(20, time.time() + float(sys.argv[1]))
'''


def record(ember, args, cmd, env=None):
    r = subprocess.run([ember, "record"] + args + ["--"] + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("ember failed: %s\n%s" % (" ".join(cmd), r.stderr))
    return r.stderr


def folded(path):
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        out.append((stack.split(";"), int(count)))
    return out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 5.0
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    ember = os.path.join(build, "ember")
    tmp = tempfile.mkdtemp(prefix="ember-pybench-")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")

    print("== attribution accuracy (native_calls.py, -F 999, %.0f s)" % seconds)
    out = os.path.join(tmp, "acc.folded")
    err = record(ember, ["-F", "999", "-o", out],
                 [PY, os.path.join(ROOT, "tests/e2e/py/native_calls.py"), str(seconds)], env)
    rules = [("cv::GaussianBlur", "blur_step"), ("cv::Canny", "edges_step"),
             ("gemm", "matmul_step"), ("deflate", "compress_step")]
    good = total = 0
    for stack, count in folded(out):
        for needle, caller in rules:
            idx = [i for i, f in enumerate(stack) if needle in f]
            if not idx:
                continue
            nearest = None
            for f in reversed(stack[:idx[0]]):
                m = PYFRAME.match(f)
                if m:
                    nearest = m.group(1)
                    break
            total += count
            good += count if nearest == caller else 0
            break
    m = re.search(r"Python frames: (\d+) of (\d+) samples \(([\d.]+)%\) disagreed", err)
    rd = re.search(r"read ([\d.]+) us/sample, starting ([\d.]+) us after the sample \((\d+) reads over 1 ms late\); "
                   r"(\d+) samples \(([\d.]+)%\) checked .*, (\d+) corrected", err)
    print("samples with a known native hot function: %d; under the right Python caller: %d (%.2f%%)"
          % (total, good, 100.0 * good / max(total, 1)))
    if m:
        print("mismatch rate reported: %s of %s samples (%s%%)" % (m.group(1), m.group(2), m.group(3)))
    if rd:
        print("Python read %s us/sample, started %s us after the sample on average (%s over 1 ms); "
              "%s%% of samples checked against the sample's instruction pointer, %s corrected"
              % (rd.group(1), rd.group(2), rd.group(3), rd.group(5), rd.group(6)))

    print("== Python stack read cost (20-deep recursion, -F 999, %.0f s)" % seconds)
    deep = os.path.join(tmp, "deep.py")
    with open(deep, "w") as f:
        f.write(DEEP)
    err = record(ember, ["-F", "999", "-o", os.path.join(tmp, "deep.folded")], [PY, deep, str(seconds)])
    m = re.search(r"read ([\d.]+) us/sample", err)
    cap = re.search(r"profiler CPU ([\d.]+) us/sample", err)
    frames = [len([x for x in s if PYFRAME.match(x)]) for s, c in folded(os.path.join(tmp, "deep.folded"))
              for _ in range(min(c, 1))]
    print("Python frames per sample (max): %d; read %s us/sample; ember capture CPU %s us/sample"
          % (max(frames or [0]), m.group(1) if m else "?", cap.group(1) if cap else "?"))

    print("== slowdown of a CPU-bound Python loop, merging on, -F 99 (%d interleaved rounds)" % rounds)
    loop = os.path.join(HERE, "targets", "loop.py")
    base, prof = [], []
    for _ in range(rounds):
        for mode in ("base", "ember"):
            cmd = [PY, loop, "8000000"]
            if mode == "ember":
                cmd = [ember, "record", "-q", "-o", os.path.join(tmp, "l.folded"), "--"] + cmd
            r = subprocess.run(cmd, capture_output=True, text=True)
            cpu = float(re.search(r"cpu ([\d.]+)", r.stdout).group(1))
            (base if mode == "base" else prof).append(cpu)
    print("loop CPU s: unprofiled min %.3f median %.3f; ember min %.3f median %.3f; ratio min/min %+.2f%%, "
          "median/median %+.2f%%" % (min(base), statistics.median(base), min(prof), statistics.median(prof),
                                      100 * (min(prof) / min(base) - 1),
                                      100 * (statistics.median(prof) / statistics.median(base) - 1)))


main()
