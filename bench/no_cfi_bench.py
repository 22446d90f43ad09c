#!/usr/bin/env python3
"""Frames without unwind info: what they cost ember, and what they cost the
stacks, against perf (docs/unwinding.md, bench/RESULTS.md).

1. Unwinding cost per sample (bench/unwind_bench.c, stacks copied in process):
   a chain with CFI all the way, with this tree's unwinder and with the one of
   an older revision (--old, default: the last one before the scan), run
   interleaved; and chains through a frame without CFI (a BLAS-style kernel,
   a non-leaf calling back, JIT code with and without its start known), with
   the scan's own time (the walk from the caller found is not counted: a
   stack with CFI costs that too).
2. Two workloads, recorded by `ember record` and by
   `perf record -e cpu-clock --call-graph dwarf,65528` at the same rate:
   NumPy matmul with OPENBLAS_CORETYPE=Haswell (dgemm_kernel_HASWELL has no
   CFI) and PyTorch INT8 inference (oneDNN's JIT kernels, named by the perf
   map both tools read).  Reported: of the samples in the no-CFI code, the
   share whose stack reaches the thread's root (_start or clone3/start_thread):
   ember's native stacks (--no-python, like perf's), and ember's merged ones
   under the right Python function and not uncertain.

usage: no_cfi_bench.py BUILD_DIR [--old REV] [--rounds N] [--runs N] [--no-workloads]
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
ROOTS = ("_start", "__libc_start_main", "__libc_start_call_main", "clone3", "clone", "start_thread")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)


def build_old_bench(rev, tmp):
    """unwind_bench against the sampler of git revision rev."""
    src = os.path.join(tmp, "old")
    os.makedirs(src)
    p = subprocess.run(["git", "-C", ROOT, "archive", rev, "sampler"], capture_output=True)
    if p.returncode:
        sys.exit("no git revision %s: %s" % (rev, p.stderr.decode(errors="replace").strip()))
    subprocess.run(["tar", "-x", "-C", src], input=p.stdout, check=True)
    flags = sh(["pkg-config", "--cflags", "--libs", "libunwind-generic", "libdw"]).stdout.split()
    out = os.path.join(tmp, "unwind_bench_old")
    cmd = ["cc", "-O2", "-g", "-std=gnu11", "-DUNWIND_BENCH_OLD", "-fomit-frame-pointer", "-rdynamic", "-I", os.path.join(ROOT, "tests/unit"),
           "-I", os.path.join(src, "sampler"), os.path.join(HERE, "unwind_bench.c")] + \
        sorted(glob.glob(os.path.join(src, "sampler", "*.c"))) + flags + ["-lunwind-x86_64", "-lelf", "-o", out]
    r = sh(cmd)
    if r.returncode:
        sys.exit("building the old unwind_bench failed:\n" + r.stderr)
    return out


def unwind_costs(new, old, rounds, runs):
    res = {}
    for i in range(runs):
        for tag, exe in (("new", new), ("old", old)):
            r = sh([exe, str(rounds)])
            for line in r.stdout.splitlines():
                name, ns, frames, scan = line.split()
                res.setdefault((tag, name), []).append((float(ns), int(frames), float(scan)))
    print("## Unwinding cost per sample (%d runs x %d unwinds, medians)\n" % (runs, rounds))
    print("| stack | frames | ns per sample | scan ns (of it) |")
    print("|---|---:|---:|---:|")
    for (tag, name), v in sorted(res.items(), key=lambda kv: (kv[0][1] != "cfi_chain", kv[0][1], kv[0][0])):
        print("| %s (%s) | %d | %.0f | %s |" % (name, "this tree" if tag == "new" else "before the scan", v[0][1],
                                            statistics.median(x[0] for x in v),
                                            "%.0f" % statistics.median(x[2] for x in v) if tag == "new" and name != "cfi_chain" else ""))
    if ("old", "cfi_chain") in res:
        ratios = [n[0] / o[0] for n, o in zip(res[("new", "cfi_chain")], res[("old", "cfi_chain")])]
        print("\nchain with CFI, this tree / before the scan, per interleaved pair: median %.3f (min %.3f, max %.3f)\n"
              % (statistics.median(ratios), min(ratios), max(ratios)))


def folded(path):
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        yield stack.split(";"), int(count)


def perf_stacks(data, pids):
    """(frames root first, 1) per sample of `perf script`; the processes
    sampled go into pids."""
    r = sh(["perf", "script", "-i", data, "-F", "pid,ip,sym"], timeout=900)
    for block in r.stdout.split("\n\n"):
        frames = []
        for line in block.splitlines():
            if re.fullmatch(r"\s*\d+\s*", line):
                pids.add(int(line))
                continue
            parts = line.split(None, 1)
            if len(parts) == 2 and re.fullmatch(r"[0-9a-f]+", parts[0]):
                frames.append(parts[1].split("+0x")[0].strip())
            elif len(parts) == 1 and re.fullmatch(r"[0-9a-f]+", parts[0]):
                frames.append("[unknown]")
        if frames:
            yield frames[::-1], 1


def share(stacks, hot, ok):
    tot = good = 0
    for f, c in stacks:
        if hot(f[-1]):
            tot += c
            good += c if ok(f) else 0
    return good, tot


def pyname(frame):
    m = re.match(r"^(.*) \((.+\.py)(:\d+)?\)$", frame)
    return m.group(1) if m else None


def workload(name, cmd, env, hot, py_caller, ember, tmp, freq):
    print("### %s\n" % name)
    native = os.path.join(tmp, name + "-native.folded")
    merged = os.path.join(tmp, name + "-merged.folded")
    data = os.path.join(tmp, name + ".perf.data")
    sh([ember, "record", "-q", "-F", str(freq), "--no-python", "-o", native, "--"] + cmd, env=env, timeout=300)
    sh([ember, "record", "-q", "-F", str(freq), "-o", merged, "--"] + cmd, env=env, timeout=300)
    r = sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "--call-graph", "dwarf,65528", "-o", data,
            "--"] + cmd, env=dict(env, PERF_BUILDID_DIR=os.path.join(tmp, "buildid")), timeout=300)
    rows = []
    complete = lambda f: f[0] in ROOTS or (f[0].endswith(")") and f[0].split(" (")[0] in ROOTS)
    g, t = share(folded(native), hot, complete)
    rows.append(("ember, native stacks", g, t))
    pids = set()
    if r.returncode == 0:
        g, t = share(perf_stacks(data, pids), hot, complete)
        rows.append(("perf --call-graph dwarf,65528", g, t))
    else:
        rows.append(("perf: failed (%s)" % r.stderr.strip()[-80:], 0, 0))
    g, t = share(folded(merged), hot,
                 lambda f: "[python frames uncertain]" not in f and f[0] != "[truncated]" and
                 any(pyname(x) == py_caller for x in f))
    rows.append(("ember, merged: under %s, certain" % py_caller, g, t))
    print("| recorded by | hot samples | with the whole stack | share |")
    print("|---|---:|---:|---:|")
    for label, g, t in rows:
        print("| %s | %d | %d | %s |" % (label, t, g, "%.1f %%" % (100.0 * g / t) if t else "-"))
    print()
    for pid in pids:   # (oneDNN's perf maps of the perf runs: the bench asked for them)
        try:
            os.unlink("/tmp/perf-%d.map" % pid)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--old", default="270ee71", help="revision before the scan (default 270ee71)")
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--freq", type=int, default=499)
    ap.add_argument("--no-workloads", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    tmp = tempfile.mkdtemp(prefix="ember-nocfi-bench-")
    try:
        new = os.path.join(build, "unwind_bench")
        if not os.access(new, os.X_OK):
            sys.exit("%s is missing: build the tree first" % new)
        unwind_costs(new, build_old_bench(a.old, tmp), a.rounds, a.runs)
        if a.no_workloads:
            return
        ember = os.path.join(build, "ember")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_", "ONEDNN_", "DNNL_"))}
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", ONEDNN_JIT_PROFILE="2", DNNL_JIT_PROFILE="2")
        script = os.path.join(tmp, "matmul.py")
        with open(script, "w") as f:
            f.write("import time\nimport numpy as np\na = np.random.default_rng(1).random((600, 600))\n"
                    "def matmul_step(a):\n    return a.dot(a)\n"
                    "end = time.time() + 4\nwhile time.time() < end:\n    matmul_step(a)\n")
        print("## Stacks through code without CFI, ember vs perf (-F %d)\n" % a.freq)
        workload("numpy-haswell", [PY, script], dict(env, OPENBLAS_CORETYPE="Haswell"),
                 lambda leaf: leaf.startswith("dgemm_kernel_HASWELL"), "matmul_step", ember, tmp, a.freq)
        workload("torch-int8", [PY, os.path.join(ROOT, "examples/python/torch_inference.py"), "--int8",
                                "--threads", "1", "--batches", "600"], env,
                 lambda leaf: re.match(r"^_?jit_\w*(gemm|gemv|copy)", leaf) is not None, "Linear.forward",
                 ember, tmp, a.freq)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
