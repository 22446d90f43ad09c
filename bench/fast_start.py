#!/usr/bin/python3
"""What a profiled run costs in wall time around the program: ember's start
before the command, and its finish after it (issue 29).

    python3 bench/fast_start.py BUILD_DIR [--ref OLD_EMBER] [--pairs 7]

Standard library only; /usr/bin/python3 with NumPy and OpenCV for the
script.  Every figure is taken in interleaved rounds (this tree, then the
reference, in a shuffled order each round) and quoted as the median, with
the ratio this/reference taken round by round.  Prints a markdown table on
stdout; progress on stderr.

Figures
  true      wall of `ember record -q -o x.folded -- /bin/true`.
  start     from starting ember to /bin/date reading the clock, as the
            command `ember record -q -o x.folded -- /bin/date +%s.%N`.
  script    bench/targets/np_cv.py (imports ~0.3 s, then 0.5 s of NumPy
            and OpenCV): its plain wall, and under `ember record -q -o x.svg
            -o x.ember`: wall, ratio to the plain run of the same round, and
            the tail (ember's exit minus the script's last clock reading).
            Cold: a fresh $XDG_CACHE_HOME each run; warm: one kept across
            the runs (after one unmeasured run).
  native    the tail after tests/targets/chain 0.5 (a C program).
  top       `ember top --interval 1 -- python3 np_cv.py`, not on a
            terminal: from the start to its first table.
  dump      `ember dump -p PID` of a Python process waiting in time.sleep:
            wall, cold and warm cache.
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
SCRIPT = os.path.join(HERE, "targets", "np_cv.py")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run(cmd, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    t1 = time.time()
    if p.returncode != 0:
        sys.exit("fast_start: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return t0, t1, p.stdout


def end_time(out):
    for line in out.splitlines():
        if line.startswith("end "):
            return float(line.split()[1])
    sys.exit("fast_start: the script printed no end time")


class Setup:
    def __init__(self, name, ember, tmp):
        self.name, self.ember = name, ember
        self.tmp = tempfile.mkdtemp(dir=tmp, prefix=name + "-")
        self.warm = os.path.join(self.tmp, "warm-cache")
        os.makedirs(self.warm)

    def env(self, cold):
        d = tempfile.mkdtemp(dir=self.tmp) if cold else self.warm
        return dict(os.environ, XDG_CACHE_HOME=d)

    def out(self, name):
        return os.path.join(self.tmp, name)


def m_true(s):
    t0, t1, _ = run([s.ember, "record", "-q", "-o", s.out("x.folded"), "--", "/bin/true"], s.env(False))
    return t1 - t0


def m_start(s):
    t0, _, out = run([s.ember, "record", "-q", "-o", s.out("x.folded"), "--", "/bin/date", "+%s.%N"], s.env(False))
    return float(out.strip()) - t0


def m_script(s, cold):
    t0, t1, out = run([s.ember, "record", "-q", "-o", s.out("x.svg"), "-o", s.out("x.ember"), "--", PY, SCRIPT],
                      s.env(cold))
    return t1 - t0, t1 - end_time(out)


def m_native(s, chain):
    t0, t1, out = run([s.ember, "record", "-q", "-o", s.out("n.folded"), "--", "/bin/sh", "-c",
                       '"$0" 0.5 && /bin/date +end\\ %s.%N', chain], s.env(False))
    return t1 - end_time(out)


def m_top(s):
    t0 = time.time()
    p = subprocess.Popen([s.ember, "top", "--interval", "1", "--", PY, SCRIPT], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=s.env(False))
    first = None
    for line in p.stdout:
        if first is None and ("OWN%" in line or "own%" in line.lower()):
            first = time.time() - t0
    p.wait()
    return first if first is not None else float("nan")


def m_dump(s, pid, cold):
    t0, t1, _ = run([s.ember, "dump", "-p", str(pid)], s.env(cold))
    return t1 - t0


def med(v):
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ref", help="another ember binary, measured in the same rounds")
    ap.add_argument("--pairs", type=int, default=7)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ember-fast-start-")
    setups = [Setup("this", os.path.join(a.build, "ember"), tmp)]
    if a.ref:
        setups.append(Setup("ref", a.ref, tmp))
    chain = os.path.join(a.build, "tests", "targets", "chain")
    waiter = subprocess.Popen([PY, "-c", "import time, numpy\nwhile True: time.sleep(0.05)"])
    time.sleep(1.0)
    res = {}

    def add(key, name, v):
        res.setdefault(key, {}).setdefault(name, []).append(v)

    try:
        for s in setups:   # one unmeasured run each: page cache, and the warm cache
            m_script(s, False)
            m_dump(s, waiter.pid, False)
        for r in range(a.pairs):
            log("round %d of %d" % (r + 1, a.pairs))
            t0, t1, _ = run([PY, SCRIPT])
            add("script plain", "-", t1 - t0)
            plain = t1 - t0
            order = setups[:]
            random.shuffle(order)
            for s in order:
                add("true", s.name, m_true(s))
                add("start", s.name, m_start(s))
                for cold in (True, False):
                    k = "cold" if cold else "warm"
                    wall, tail = m_script(s, cold)
                    add("script %s wall" % k, s.name, wall)
                    add("script %s ratio" % k, s.name, wall / plain)
                    add("script %s tail" % k, s.name, tail)
                    add("dump %s" % k, s.name, m_dump(s, waiter.pid, cold))
                add("native tail", s.name, m_native(s, chain))
                add("top first table", s.name, m_top(s))
    finally:
        waiter.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    names = [s.name for s in setups]
    print("| figure (s, median of %d rounds) | %s |%s" % (a.pairs, " | ".join(names),
          " this/ref, paired median |" if a.ref else ""))
    print("|---|%s%s" % ("---|" * len(names), "---|" if a.ref else ""))
    print("| script plain (no profiler) | %.3f |%s" % (med(res["script plain"]["-"]),
          " |" * (len(names) - 1 + (1 if a.ref else 0))))
    for key, byname in res.items():
        if key == "script plain":
            continue
        cells = ["%.3f" % med(byname[n]) for n in names]
        row = "| %s | %s |" % (key, " | ".join(cells))
        if a.ref:
            pairs = [x / y for x, y in zip(byname["this"], byname["ref"]) if y > 0 and x == x and y == y]
            row += " %.2f |" % med(pairs)
        print(row)


if __name__ == "__main__":
    main()
