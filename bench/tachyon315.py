#!/usr/bin/env python3
"""ember against CPython 3.15's own sampling profiler (`python3.15 -m
profiling.sampling`, "Tachyon"), side by side on Python 3.15, in one
invocation.  Standard library only (host Python 3); the targets run under
python3.15 from a Debian sid root file system.

usage: tachyon315.py BUILD_DIR [--reps N] [--rates 99,999] [--only numpy,pure]
                     [--scale F] [--json OUT]

The sid root comes from $EMBER_SID_ROOT (default /tmp/sidtest/root; `make
sid-root` will build one under ~/.cache/ember/sid-root).  Without it, or
without root privileges (the targets run in a private mount namespace), the
bench says so loudly and exits 77.  It only reads the root: its own files go
to a directory of its own under ROOT/tmp, removed at the end.

How a target runs.  Tachyon needs /proc inside the root; so that it does not
depend on anybody's mounts, every target (unprofiled too) runs as a
container does: `unshare -m`, the root bind-mounted on itself with /proc
mounted in it, `pivot_root` into it, exec python3.15.  The environment is
fixed, not inherited: OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1,
PYTHONHASHSEED=0.

Workloads (fixed work, not wall time; each times its own work):
- numpy: rounds of gemm (256x256 A @ B, 6 calls), fft (np.fft.fft of 64 Ki,
  10), sort (np.sort of 200 k floats, 11), elemwise (exp*sin+sqrt of 200 k, 3)
  and glue (a pure-Python dict loop, 30): by cost about 40/20/20/10/10 %.
- pure: rounds of alpha/beta/gamma calling the same work unit 50/30/20
  times (a 50/30/20 split by iteration counts): function calls, dicts,
  string formatting, and a method hot spot (Tokenizer.scan: split, strip,
  lower, dict counting).

Settings, interleaved in a shuffled order in every repetition:
- base: no profiler;
- ember F: `ember record -F F -p PID -o X.folded -o X.pstats`, attached
  to the target before its work starts (the target waits for a go file);
- tachyon F: `python3.15 -m profiling.sampling run -r F -a --native
  --collapsed -o X.collapsed SCRIPT` (all threads, its <native> markers;
  wall mode, its default);
- ember 99 launching (numpy only): `ember record -F 99 -- <the same launch>`,
  the way a user runs it; ember's rows attach because launching through a
  change of root goes wrong (bench/RESULTS.md), and this row shows how.
Per setting: elapsed time of the fixed work (the target's own clock) against
the same repetition's baseline; the profiler's CPU (rusage of the profiler,
or of the whole process tree minus the target's own getrusage and the
launcher's share measured in the baselines) per sample and as a share of a
core; from the outputs: native leaves, Python-function shares against the
target's own per-phase timings, and (numpy) whether samples in the BLAS, FFT
and sort kernels sit under gemm, fft and sort.  The sort kernel has no
symbol in the sid root (NumPy's functions are hidden): its functions are
taken from .eh_frame ranges that hold the leaves of a sort-only calibration
run (ember, native stacks only).  Finally each profiler's pstats output is
loaded by python3.15's own pstats module.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3.15"
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")
TARGET_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root", "LANG": "C.UTF-8",
              "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "PYTHONHASHSEED": "0"}
# unshare(1) execs sh, sh execs python3.15: one pid from launch to exit.
LAUNCH = ('R=$1; shift; mount --bind "$R" "$R" && mount -t proc proc "$R/proc" && cd "$R" && '
          'pivot_root . . && exec "$@"')

COMMON = r'''
import json, os, resource, sys, time

def finish(out, t0, c0, phases, extra):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    try:   # (no /proc under a plain chroot)
        blas = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l or "lapack" in l})
    except OSError:
        blas = []
    res = dict(elapsed=time.perf_counter() - t0, work_cpu=time.process_time() - c0, phases=phases,
               target_cpu=ru.ru_utime + ru.ru_stime, pid=os.getpid(), python=sys.version.split()[0],
               blas=blas, **extra)
    with open(out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out + ".tmp", out)

def wait_go(go):
    print("ready", flush=True)
    while go != "-" and not os.path.exists(go):
        time.sleep(0.005)

def run(plan, rounds, only):
    phases = {f.__name__: 0.0 for f, _ in plan}
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        for f, n in plan:
            if only and f.__name__ != only:
                continue
            c = time.process_time()
            for _ in range(n):
                f()
            phases[f.__name__] += time.process_time() - c
    return t0, c0, phases
'''

NUMPY_WL = COMMON + r'''
import numpy as np

rng = np.random.default_rng(1)
A = rng.random((256, 256))
B = rng.random((256, 256))
X = rng.random(1 << 16)
S = rng.random(200_000)
E = rng.random(200_000)
WORDS = ["w%d" % (i % 97) for i in range(4000)]

def gemm():
    return A @ B

def fft():
    return np.fft.fft(X)

def sort():
    return np.sort(S)

def elemwise():
    return np.exp(E) * np.sin(E) + np.sqrt(E)

def glue():
    d = {}
    for w in WORDS:
        d[w] = d.get(w, 0) + len(w)
    return sum(d.values())

PLAN = [(gemm, 6), (fft, 10), (sort, 11), (elemwise, 3), (glue, 30)]

def main():
    out, go, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    only = sys.argv[4] if len(sys.argv) > 4 else None
    wait_go(go)
    t0, c0, phases = run(PLAN, rounds, only)
    finish(out, t0, c0, phases, dict(numpy=np.__version__))

main()
'''

PURE_WL = COMMON + r'''
TEXT = " ".join("Word%d, item%d; thing%d." % (i % 53, i % 31, i % 17) for i in range(60))

class Tokenizer:
    def __init__(self):
        self.counts = {}

    def scan(self, text):
        counts = self.counts
        for word in text.split():
            w = word.strip(".,;").lower()
            counts[w] = counts.get(w, 0) + 1
        return len(counts)

def mix(i):
    return (i * 2654435761) % 65521

def work_unit(tok):
    s = 0
    for i in range(120):
        s += mix(i)
    table = {"k%d" % j: j * s for j in range(20)}
    label = "-".join(sorted(table)[:5])
    return tok.scan(TEXT) + s + len(label)

def alpha(tok):
    for _ in range(50):
        work_unit(tok)

def beta(tok):
    for _ in range(30):
        work_unit(tok)

def gamma(tok):
    for _ in range(20):
        work_unit(tok)

def main():
    out, go, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tok = Tokenizer()
    plan = [(lambda: alpha(tok), 1), (lambda: beta(tok), 1), (lambda: gamma(tok), 1)]
    for (f, _), name in zip(plan, ("alpha", "beta", "gamma")):
        f.__name__ = name
    wait_go(go)
    t0, c0, phases = run(plan, rounds, None)
    finish(out, t0, c0, phases, {})

main()
'''

WORKLOADS = {
    # name: (source, rounds at scale 1, phase functions, hot function for pstats)
    "numpy": (NUMPY_WL, 100, ("gemm", "fft", "sort", "elemwise", "glue"), "gemm"),
    "pure": (PURE_WL, 1800, ("alpha", "beta", "gamma"), "scan"),
}
KERNELS = (("BLAS", "gemm"), ("FFT", "fft"), ("sort", "sort"))


def skip(msg):
    bar = "!" * 78
    print("%s\ntachyon315: SKIPPED: %s\n%s" % (bar, msg, bar), file=sys.stderr)
    sys.exit(77)


def preflight(sid):
    if not os.path.exists(os.path.join(sid, PY.lstrip("/"))):
        skip("no Debian sid root with %s at %s (set EMBER_SID_ROOT; `make sid-root` will build one "
             "under ~/.cache/ember/sid-root)" % (PY, sid))
    if not os.path.isdir(os.path.join(sid, "usr/lib/python3/dist-packages/numpy")):
        skip("the sid root at %s has no NumPy (python3-numpy)" % sid)
    if os.geteuid() != 0:
        skip("needs root: the targets run in a private mount namespace (unshare -m, pivot_root)")
    for tool in ("unshare", "pivot_root", "mount", "chroot"):
        if not shutil.which(tool):
            skip("no %s(8) on this host" % tool)


class Bench:
    def __init__(self, build, sid, scale):
        self.ember = os.path.join(os.path.abspath(build), "ember")
        if not os.access(self.ember, os.X_OK):
            sys.exit("%s is missing: build the tree first" % self.ember)
        self.sid = sid
        self.scale = scale
        self.host_dir = tempfile.mkdtemp(prefix="ember-tachyon315-", dir=os.path.join(sid, "tmp"))
        self.dir = "/tmp/" + os.path.basename(self.host_dir)   # the same, seen from inside the root
        self.n = 0
        for name, (src, _, _, _) in WORKLOADS.items():
            with open(self.host(self.script(name)), "w") as f:
                f.write(src)

    def host(self, inside):
        return self.sid + inside

    def script(self, name):
        return "%s/%s_wl.py" % (self.dir, name)

    def launch(self, cmd):
        return ["unshare", "-m", "--propagation", "private", "--", "sh", "-c", LAUNCH, "sh", self.sid] + cmd

    def fresh(self, tag):
        self.n += 1
        return "%s/%03d-%s" % (self.dir, self.n, tag)

    def spawn(self, cmd, log, env=None):
        with open(log, "w") as f:
            return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env or TARGET_ENV)

    @staticmethod
    def reap(p):
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        return ru.ru_utime + ru.ru_stime

    def result(self, out, log, what):
        try:
            with open(self.host(out)) as f:
                return json.load(f)
        except OSError:
            with open(log, errors="replace") as f:
                sys.exit("%s: the target wrote no result; its output:\n%s" % (what, f.read()[-3000:]))

    def run(self, wl, setting, rate, only=None, rounds=None, tachyon_format="collapsed"):
        """One run: dict with the target's result, the profiler's CPU and
        samples, and where its outputs are (host paths).  only: one phase
        of the workload (calibration)."""
        rounds = rounds or max(1, int(WORKLOADS[wl][1] * self.scale))
        base = self.fresh("%s-%s-%d" % (wl, setting, rate))
        out = base + ".json"
        log = self.host(base + ".log")
        args = [self.script(wl), out, "-", str(rounds)] + ([only] if only else [])
        r = {"setting": setting, "rate": rate}
        t0 = time.monotonic()
        if setting == "base":
            p = self.spawn(self.launch([PY] + args), log)
            r["tree_cpu"] = self.reap(p)
        elif setting == "tachyon":
            p = self.run_tachyon(r, base, log, rate, args, tachyon_format)
        elif setting == "ember-launch":
            folded, pstats = self.host(base + ".folded"), self.host(base + ".pstats")
            p = self.spawn([self.ember, "record", "-F", str(rate), "-o", folded, "-o", pstats, "--"] +
                           self.launch([PY] + args), log)
            r["tree_cpu"] = self.reap(p)
            r.update(parse_ember_summary(open(log, errors="replace").read()), output=folded, pstats=pstats)
        else:
            p = self.run_ember_attached(r, wl, base, log, rate, args)
        r["wall"] = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit("%s %s: exit status %d:\n%s" % (wl, setting, p.returncode, open(log).read()[-2000:]))
        r.update(self.result(out, log, "%s %s" % (wl, setting)))
        return r

    def run_tachyon(self, r, base, log, rate, args, fmt):
        tout = "%s.%s" % (base, fmt)
        p = self.spawn(self.launch([PY, "-m", "profiling.sampling", "run", "-r", str(rate), "-a", "--native",
                                    "--" + fmt, "-o", tout] + args), log)
        r["tree_cpu"] = self.reap(p)
        text = open(log, errors="replace").read()
        m = re.search(r"Captured (\d+) samples in ([\d.]+) seconds", text)
        e = re.search(r"Error rate: ([\d.]+)", text)
        r.update(samples=int(m.group(1)) if m else 0, error_rate=float(e.group(1)) if e else None,
                 output=self.host(tout), log_tail=text[-600:])
        return p

    def run_ember_attached(self, r, wl, base, log, rate, args):
        """ember attached to the target while it waits for its go file."""
        go = base + ".go"
        args[2] = go
        p = self.spawn(self.launch([PY] + args), log)
        deadline = time.time() + 60
        while "ready" not in open(log, errors="replace").read():
            if p.poll() is not None or time.time() > deadline:
                sys.exit("%s: the target did not start:\n%s" % (wl, open(log).read()[-2000:]))
            time.sleep(0.01)
        elog = self.host(base + ".ember.log")
        folded, pstats = self.host(base + ".folded"), self.host(base + ".pstats")
        e = self.spawn([self.ember, "record", "-F", str(rate), "-p", str(p.pid), "-o", folded, "-o", pstats],
                       elog, env=dict(os.environ))
        time.sleep(0.7)   # ember attached and sampling (it needs ~0.1-0.3 s)
        open(self.host(go), "w").close()
        self.reap(p)
        r["profiler_cpu"] = self.reap(e)
        text = open(elog, errors="replace").read()
        if e.returncode != 0:
            sys.exit("%s: ember exited with %d:\n%s" % (wl, e.returncode, text[-2000:]))
        r.update(parse_ember_summary(text), output=folded, pstats=pstats)
        return p

    def cleanup(self):
        shutil.rmtree(self.host_dir, ignore_errors=True)


def parse_ember_summary(text):
    m = re.search(r"(\d+) samples, (\d+) lost, (\d+) truncated, (\d+) unwind failures", text)
    u = re.search(r"(\d+) of (\d+) samples \(([\d.]+)%\) disagreed", text)
    c = re.search(r"profiler CPU ([\d.]+) us/sample while sampling", text)
    y = re.search(r"symbolization (\d+) ms CPU", text)
    return dict(samples=int(m.group(1)) if m else 0, unwind_failures=int(m.group(4)) if m else None,
                uncertain=int(u.group(1)) if u else 0, sampling_us=float(c.group(1)) if c else None,
                symbolization_ms=int(y.group(1)) if y else None, log_tail=text[-1500:])


# ---- reading the outputs ----

def ember_stacks(path):
    """[(frames root first as (kind, name, file), count)] from ember's folded
    output; kind: py, native or mark (ember's own markers)."""
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        frames = []
        for f in stack.split(";"):
            m = PYFRAME.match(f)
            if m:
                frames.append(("py", m.group(1).rsplit(".", 1)[-1], os.path.basename(m.group(2))))
            elif f in ("[python frames uncertain]", "[truncated]"):
                frames.append(("mark", f, ""))
            else:
                frames.append(("native", f, ""))
        out.append((frames, int(count)))
    return out


def tachyon_stacks(path):
    """The same from Tachyon's collapsed output: `tid:N;file:func:line;...`;
    <native> and <GC> are its markers."""
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        frames = []
        for f in stack.split(";")[1:]:
            if f in ("<native>", "<GC>"):
                frames.append(("mark", f, ""))
                continue
            parts = f.rsplit(":", 2)
            name = parts[1] if len(parts) == 3 else f
            frames.append(("py", name.rsplit(".", 1)[-1], os.path.basename(parts[0])))
        out.append((frames, int(count)))
    return out


def phase_of(frames, phases, script):
    """The innermost workload phase function on the stack and its index,
    or (None, None)."""
    for i in range(len(frames) - 1, -1, -1):
        kind, name, file = frames[i]
        if kind == "py" and name in phases and file == script:
            return name, i
    return None, None


def analyse(stacks, phases, script, kernel_of):
    """Per run: samples in the work, native leaves, per-phase shares,
    kernel samples under the right phase."""
    a = {"work": 0, "native_below": 0, "native_leaf": 0, "named_leaf": 0, "uncertain": 0,
         "phase": {p: 0 for p in phases},
         "kernel": {k: [0, 0, 0] for k, _ in KERNELS}}   # in kernel, under its phase, of those certain
    for frames, count in stacks:
        ph, at = phase_of(frames, phases, script)
        if ph is None:
            continue
        a["work"] += count
        below = frames[at + 1:]
        a["native_below"] += count if any(k == "native" or n == "<native>" for k, n, _ in below) else 0
        a["phase"][ph] += count
        uncertain = any(n == "[python frames uncertain]" for _, n, _ in frames)
        a["uncertain"] += count if uncertain else 0
        kind, name, _ = frames[-1]
        if kind == "native":
            a["native_leaf"] += count
            a["named_leaf"] += count if not name.startswith("[") else 0
        k = kernel_of(name) if kind == "native" else None
        if k:
            want = dict(KERNELS)[k]
            a["kernel"][k][0] += count
            a["kernel"][k][1] += count if ph == want else 0
            a["kernel"][k][2] += count if ph == want and not uncertain else 0
    return a


def resolve_in_root(sid, path):
    """path inside the root, its symbolic links followed there (Debian's
    alternatives are absolute links), as a host path."""
    for _ in range(40):
        host = sid + path
        if not os.path.islink(host):
            return host
        target = os.readlink(host)
        path = target if target.startswith("/") else os.path.join(os.path.dirname(path), target)
    return sid + path


class Kernels:
    """Which kernel a native leaf is in: BLAS (libblas: its exported names or
    offsets), FFT (NumPy's pocketfft module), sort (functions of
    _multiarray_umath found by calibration)."""

    def __init__(self, sid):
        self.sid = sid
        lib = resolve_in_root(sid, "/usr/lib/x86_64-linux-gnu/libblas.so.3")
        r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
        self.blas = {l.split()[-1] for l in r.stdout.splitlines() if " T " in l}
        self.blas_lib = lib
        self.umath = os.path.join(sid, "usr/lib/python3/dist-packages/numpy/_core/"
                                  "_multiarray_umath.cpython-315-x86_64-linux-gnu.so")
        self.ranges = self.fde_ranges(self.umath)
        self.sort_fns = set()

    @staticmethod
    def fde_ranges(path):
        r = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True, text=True)
        out = []
        for m in re.finditer(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", r.stdout):
            out.append((int(m.group(1), 16), int(m.group(2), 16)))
        return sorted(out)

    def function_at(self, off):
        import bisect
        i = bisect.bisect_right(self.ranges, (off, float("inf"))) - 1
        if i >= 0 and self.ranges[i][0] <= off < self.ranges[i][1]:
            return self.ranges[i]
        return None

    def umath_offset(self, name):
        m = re.match(r"^\[_multiarray_umath\.cpython-315-x86_64-linux-gnu\.so\+0x([0-9a-f]+)\]$", name)
        return int(m.group(1), 16) if m else None

    def calibrate(self, stacks_sort, stacks_elem):
        """Functions of _multiarray_umath holding >= 2 % of the leaves of a
        sort-only run and < 1 % of those of an elementwise-only run."""
        def hist(stacks):
            h, n = {}, 0
            for frames, count in stacks:
                off = self.umath_offset(frames[-1][1])
                fn = self.function_at(off) if off is not None else None
                if fn:
                    h[fn] = h.get(fn, 0) + count
                    n += count
            return h, max(n, 1)
        hs, ns = hist(stacks_sort)
        he, ne = hist(stacks_elem)
        self.sort_fns = {fn for fn, c in hs.items() if c >= 0.02 * ns and he.get(fn, 0) < 0.01 * ne}
        covered = sum(hs[fn] for fn in self.sort_fns)
        return len(self.sort_fns), covered, ns

    def __call__(self, name):
        if name in self.blas or name.startswith("[libblas"):
            return "BLAS"
        if name.startswith("[_pocketfft_umath"):
            return "FFT"
        off = self.umath_offset(name)
        if off is not None and self.function_at(off) in self.sort_fns:
            return "sort"
        return None


def pstats_check(bench, path, hot):
    """Load path with python3.15's pstats (in the sid root, plain chroot) and
    print its top 5 by cumulative time: (loads, rank of the hot function by
    cumulative time, rank by own time, the top function by own time, the
    output)."""
    inside = path[len(bench.sid):]
    code = ("import pstats, io\n"
            "s = io.StringIO(); st = pstats.Stats(%r, stream=s)\n"
            "st.sort_stats('cumulative').print_stats(5); print(s.getvalue())\n"
            "for i in (3, 2):\n"
            "    keys = [k for k, v in sorted(st.stats.items(), key=lambda kv: -kv[1][i])]\n"
            "    rank = [n for n, k in enumerate(keys, 1) if k[2].rsplit('.', 1)[-1] == %r][:1]\n"
            "    print('RANK', rank[0] if rank else 0, len(keys), keys[0])\n" % (inside, hot))
    r = subprocess.run(["chroot", bench.sid, PY, "-c", code], capture_output=True, text=True, env=TARGET_ENV)
    if r.returncode != 0:
        return dict(ok=False, error=(r.stderr.strip().splitlines() or ["?"])[-1], out=r.stderr)
    ranks = re.findall(r"^RANK (\d+) (\d+) (.*)$", r.stdout, re.M)
    return dict(ok=True, cum=(int(ranks[0][0]), int(ranks[0][1])), own=(int(ranks[1][0]), int(ranks[1][1])),
                top_own=ranks[1][2], out=r.stdout.split("RANK")[0])


# ---- the bench ----

def settings_for(wl, rates):
    s = [("base", 0)]
    for f in rates:
        s += [("ember", f), ("tachyon", f)]
    if wl == "numpy":   # dlopen after the start: what goes wrong when ember launches it
        s.append(("ember-launch", 99))
    return s


def label(setting, rate):
    return {"base": "no profiler", "ember": "ember -F %d (attached)" % rate,
            "tachyon": "Tachyon -r %d -a --native" % rate,
            "ember-launch": "ember -F %d, launching" % rate}[setting]


def pct(x, n):
    return "%.1f %%" % (100.0 * x / n) if n else "-"


def med_range(v, fmt="%.3f"):
    if not v:
        return "-"
    return (fmt + " [" + fmt + ".." + fmt + "]") % (statistics.median(v), min(v), max(v))


def bench_workload(b, wl, rates, reps, kernels, rng, report):
    _, rounds, phases, hot = WORKLOADS[wl]
    settings = settings_for(wl, rates)
    runs = {s: [] for s in settings}
    t0 = time.time()
    for rep in range(reps):
        order = settings[:]
        rng.shuffle(order)
        for s in order:
            r = b.run(wl, s[0], s[1])
            r["rep"] = rep
            runs[s].append(r)
    report["runs"][wl] = {"%s %d" % s: v for s, v in runs.items()}
    print("## %s workload (%d rounds, %d repetitions, %.0f s)\n" % (wl, max(1, int(rounds * b.scale)), reps,
                                                                   time.time() - t0))
    cost_table(wl, runs, settings, rates)
    accuracy_table(wl, runs, settings, phases, "%s_wl.py" % wl, kernels)
    return runs


def cost_table(wl, runs, settings, rates):
    base = runs[("base", 0)]
    overhead = statistics.median(r["tree_cpu"] - r["target_cpu"] for r in base)
    print("Target: Python %s%s; launcher CPU %.0f ms (subtracted from tree totals)\n" % (
        base[0]["python"], ", NumPy %s, BLAS %s" % (base[0]["numpy"], " ".join(base[0]["blas"]))
        if wl == "numpy" else "", 1000 * overhead))
    print("| setting | elapsed s, median [min..max] | slowdown (elapsed), paired median [min..max] |"
          " work CPU, paired median [min..max] | samples | profiler CPU ms | µs / sample | % of a core |"
          " failures |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    bymap = {r["rep"]: r for r in base}
    med = {}
    for s in settings:
        v = runs[s]
        slow = [100 * (r["elapsed"] / bymap[r["rep"]]["elapsed"] - 1) for r in v]
        cpu = [100 * (r["work_cpu"] / bymap[r["rep"]]["work_cpu"] - 1) for r in v]
        if s[0] == "base":
            print("| %s | %s | | %s s | | | | | |" % (label(*s), med_range([r["elapsed"] for r in v]),
                                                   med_range([r["work_cpu"] for r in v])))
            continue
        pcpu = [r["profiler_cpu"] if "profiler_cpu" in r else r["tree_cpu"] - r["target_cpu"] - overhead
                for r in v]
        for r, c in zip(v, pcpu):
            r["profiler_cpu_s"] = c
        per = [1e6 * c / r["samples"] for r, c in zip(v, pcpu) if r["samples"]]
        core = [100 * c / r["wall"] for r, c in zip(v, pcpu)]
        if s[0] == "tachyon":
            errs = "error rate %s %%" % med_range([r["error_rate"] or 0 for r in v], "%.2f")
        else:
            errs = "unwind failures %s" % "/".join(str(r["unwind_failures"]) for r in v)
        med[s] = (statistics.median(pcpu), statistics.median(r["samples"] for r in v))
        print("| %s | %s | %s | %s | %d | %.0f | %.0f | %.2f | %s |" % (
            label(*s), med_range([r["elapsed"] for r in v]), med_range(slow, "%+.1f%%"),
            med_range(cpu, "%+.1f%%"), med[s][1], 1000 * med[s][0], statistics.median(per) if per else 0,
            statistics.median(core), errs))
    print()
    lo, hi = min(rates), max(rates)
    for who in ("ember", "tachyon"):
        if lo == hi or (who, lo) not in med:
            continue
        (c0, n0), (c1, n1) = med[(who, lo)], med[(who, hi)]
        per = (c1 - c0) / max(n1 - n0, 1)
        line = "%s: CPU per extra sample from -F %d to %d %.0f µs; the rest, extrapolated to no samples, %.0f ms" % (
            "ember" if who == "ember" else "Tachyon", lo, hi, 1e6 * per, 1000 * (c0 - per * n0))
        if who == "ember":
            v = runs[(who, hi)]
            line += ("; ember's own summary at -F %d: %.1f µs/sample while sampling, symbolization %d ms" % (
                hi, statistics.median(r["sampling_us"] or 0 for r in v),
                statistics.median(r["symbolization_ms"] or 0 for r in v)))
        print(line + ".\n")


def accuracy_table(wl, runs, settings, phases, script, kernels):
    truth = {}
    for r in runs[("base", 0)]:
        tot = sum(r["phases"].values())
        for p in phases:
            truth.setdefault(p, []).append(100 * r["phases"][p] / tot)
    head = " | ".join("%s %% (truth %.1f)" % (p, statistics.median(truth[p])) for p in phases)
    print("Samples in the work (under a workload function), medians over the repetitions; truth: the "
          "target's own CPU time per function%s.\n" % (" (iteration counts: 50/30/20)" if wl == "pure" else ""))
    cols = ("| setting | work samples | a native frame under the workload function | native leaf | named native leaf"
            " | uncertain | %s | max abs error, points |" % head)
    if wl == "numpy":
        cols += " BLAS under gemm | FFT under fft | sort under sort |"
    print(cols)
    print("|---" * (cols.count("|") - 1) + "|")
    for s in settings:
        if s[0] == "base":
            continue
        rows = []
        for r in runs[s]:
            st = tachyon_stacks(r["output"]) if s[0] == "tachyon" else ember_stacks(r["output"])
            rows.append(analyse(st, phases, script, kernels))
        for r, a in zip(runs[s], rows):
            r["analysis"] = a

        def m(fn):
            return statistics.median(fn(a) for a in rows)
        work = m(lambda a: a["work"])
        line = "| %s | %d | %s | %s | %s | %s |" % (
            label(*s), work, pct(m(lambda a: a["native_below"] / max(a["work"], 1)), 1),
            pct(m(lambda a: a["native_leaf"] / max(a["work"], 1)), 1),
            pct(m(lambda a: a["named_leaf"] / max(a["work"], 1)), 1),
            pct(m(lambda a: a["uncertain"] / max(a["work"], 1)), 1))
        errs = []
        for p in phases:
            share = m(lambda a: 100 * a["phase"][p] / max(a["work"], 1))
            errs.append(abs(share - statistics.median(truth[p])))
            line += " %.1f |" % share
        line += " %.1f |" % max(errs)
        if wl == "numpy":
            for k, _ in KERNELS:
                n = sum(a["kernel"][k][0] for a in rows)
                good = sum(a["kernel"][k][1] for a in rows)
                sure = sum(a["kernel"][k][2] for a in rows)
                line += " %s |" % ("%s of %d (%s certain)" % (pct(good, n), n, pct(sure, n)) if n else "none seen")
        print(line)
    print()


def calibrate(b, kernels, rate=999):
    """ember's native stacks of a sort-only and an elementwise-only run."""
    got = {}
    for only, rounds in (("sort", 150), ("elemwise", 300)):   # ~1.5 s each
        r = b.run("numpy", "ember", rate, only=only, rounds=max(1, int(rounds * b.scale)))
        got[only] = ember_stacks(r["output"])
    n, covered, total = kernels.calibrate(got["sort"], got["elemwise"])
    print("Sort kernel: %d functions of _multiarray_umath (by .eh_frame range) hold %d of the %d "
          "_multiarray_umath leaves of a sort-only run (-F %d); none of them holds 1 %% of an elementwise-only "
          "run's.\n" % (n, covered, total, rate))


def pstats_section(b, report):
    print("## pstats outputs loaded by python3.15's pstats "
          "(`pstats.Stats(F).sort_stats('cumulative').print_stats(5)`)\n")
    print("| workload | profiler | loads | hot function: rank by cumulative | by own time | top by own time |")
    print("|---|---|---|---|---|---|")
    for wl in WORKLOADS:
        if wl not in report["runs"]:
            continue
        hot = WORKLOADS[wl][3]
        ember_run = report["runs"][wl]["ember 99"][0]
        t = b.run(wl, "tachyon", 99, tachyon_format="pstats")
        for who, path in (("ember -F 99", ember_run["pstats"]), ("Tachyon -r 99", t["output"])):
            c = pstats_check(b, path, hot)
            report.setdefault("pstats", []).append(dict(workload=wl, who=who, **c))
            if not c["ok"]:
                print("| %s | %s | **no**: %s | | | |" % (wl, who, c["error"]))
                continue
            print("| %s | %s | yes | `%s`: %s of %d | %s of %d | `%s` |" % (
                wl, who, hot, c["cum"][0] or "absent", c["cum"][1], c["own"][0] or "absent", c["own"][1],
                c["top_own"]))
    print()
    for p in report.get("pstats", []):
        print("%s, %s: the top 5 by cumulative time\n\n    %s\n" % (
            p["workload"], p["who"], "\n    ".join(l for l in p["out"].splitlines()[-9:] if l.strip())))


def chroot_check(b):
    """ember launching the target through plain chroot(8), the simplest way
    to run it in the root: does it still unwind?"""
    rounds = max(1, int(30 * b.scale))
    base = b.fresh("chroot")
    folded = b.host(base + ".folded")
    log = b.host(base + ".log")
    p = b.spawn([b.ember, "record", "-F", "99", "-o", folded, "--", "chroot", b.sid, PY, b.script("numpy"),
                 base + ".json", "-", str(rounds)], log)
    b.reap(p)
    s = parse_ember_summary(open(log, errors="replace").read())
    print("ember -F 99 -- chroot ROOT python3.15 (numpy workload, %d rounds): %d samples, %s unwind failures, "
          "%d marked [python frames uncertain]\n" % (rounds, s["samples"], s["unwind_failures"], s["uncertain"]))
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rates", default="99,999")
    ap.add_argument("--only", default="numpy,pure")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the fixed work (default 1: ~5 s each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    sid = os.environ.get("EMBER_SID_ROOT", "/tmp/sidtest/root")
    preflight(sid)
    rates = [int(x) for x in a.rates.split(",")]
    b = Bench(a.build, sid, a.scale)
    rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                         text=True).stdout.strip()
    report = {"ember": rev, "rates": rates, "reps": a.reps, "runs": {}}
    t0 = time.time()
    try:
        print("# ember vs Tachyon on Python 3.15 (ember %s; sid root %s; %s)\n" % (
            rev, sid, time.strftime("%Y-%m-%d %H:%M")))
        kernels = Kernels(sid)
        rng = random.Random(a.seed)
        wls = a.only.split(",")
        if "numpy" in wls:
            calibrate(b, kernels)
        for wl in wls:
            bench_workload(b, wl, rates, a.reps, kernels, rng, report)
        pstats_section(b, report)
        report["chroot"] = chroot_check(b)
        print("Total %.0f s." % (time.time() - t0))
    finally:
        b.cleanup()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1, default=str)


if __name__ == "__main__":
    main()
