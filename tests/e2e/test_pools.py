"""pools: the samples of thread pools' threads go under the stack that
dispatched their work (docs/pools.md), against truth each program measures
itself: every stage of it times the process's CPU (all threads) it took.

- omp_stages (gcc -fopenmp, two threads, OMP_WAIT_POLICY=passive so that
  idle workers sleep rather than spin): each stage's share of the samples
  within 5 points of its share of the CPU; at least 90% of the worker
  thread's samples under main;stage_*;GOMP_parallel (with --threads: the
  worker's root, then main's frames).
- ember top (-d, --threads -o) on the same: the worker's samples under
  main;stage_*;GOMP_parallel as in record's profile.
- the same with the default (spinning) policy: the workers' waiting is
  marked [OpenMP wait], no sample ends in libgomp's own frames, and the
  summary gives OpenMP's share of waiting.
- pthreadpool_stages (pthreadpool, the pool of PyTorch's XNNPACK, built
  here where libpthreadpool-dev is installed): each stage within 5 points;
  at least 90% of the worker's samples in a kernel under
  main;stage_*;pthreadpool_parallelize_1d; its waiting marked.
- pool_stages (a pthread pool of the program's own, its caller taking a
  share): each stage within 5 points; worker samples under main;stage_*.
- tests/python/pool_stages.py (/usr/bin/python3: NumPy on OpenBLAS's
  threads, OpenCV on TBB's, PyTorch on OpenMP's, two each, and pure Python):
  each stage within 5 points of its share of the loop's CPU, at least 90%
  of the loop's samples under a stage, no [unknown] root; worker threads'
  samples (--threads) mostly under a stage; the summary's line on pool
  threads; with many small PyTorch operators (tests/python/torch_small_ops.py)
  the summary gives OpenMP's share of waiting, lower with
  OMP_WAIT_POLICY=passive, the waiting under the Python function that runs
  them; without debug files (/usr/lib/debug hidden in a mount namespace,
  libc's thread start unnamed) the workers still under a stage;
  --python-only: no native thread shows as [unknown]; the .ember
  file keeps which rows ran on workers (the SVG tooltip names the worker
  thread, pprof labels dispatcher_frames); --no-attribution leaves them
  under their own threads.
Skipped (77) when sampling is not permitted, or when /usr/bin/python3 lacks
NumPy, OpenCV or PyTorch (the Python part only).
"""
import gzip
import json
import os
import re
import shlex
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "python", "pool_stages.py")
PY = E.PYTHON
TOLERANCE = 5.0   # points of share

chk = E.Checker("e2e.pools")
d = E.tmpdir()


def clean_env(**extra):
    """The environment without inherited thread-pool settings, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "GOMP_", "KMP_", "OPENBLAS_", "GOTO", "MKL_", "TBB_"))}
    env.update(extra)
    return env


def stage_of(frames):
    """The innermost frame named stage_* (a function name, Python frames
    without their file and line), or None."""
    found = None
    for f in frames:
        m = re.match(r"(stage_\w+)( \(|$)", f)
        if m:
            found = m.group(1)
    return found


def truth_c(res):
    """A C target's 'stage NAME SECONDS' lines, as shares (%)."""
    t = {m.group(1): float(m.group(2)) for m in re.finditer(r"^stage (\w+) ([\d.]+)$", res.stdout, re.M)}
    total = sum(t.values()) or 1.0
    return {k: 100.0 * v / total for k, v in t.items()}


def shares(prof, inside=None):
    """Each stage's share (%) of the samples inside the loop (inside(frames):
    None counts every stack), and the share under no stage."""
    counts, total = {}, 0
    for frames, c in prof.stacks:
        if inside and not inside(frames):
            continue
        total += c
        s = stage_of(frames) or "(none)"
        counts[s] = counts.get(s, 0) + c
    return {k: 100.0 * v / (total or 1) for k, v in counts.items()}, total


def check_shares(name, got, truth):
    for stage, want in sorted(truth.items()):
        have = got.get(stage, 0.0)
        chk.check(abs(have - want) <= TOLERANCE,
                  "%s: %s at %.1f%% of the samples, %.1f%% of the CPU (within %g points)" %
                  (name, stage, have, want, TOLERANCE))


def record_c(name, env, opts=()):
    out = os.path.join(d, "%s.folded" % name)
    res = E.record(["-o", out] + list(opts), [E.target(name), "3"], env=env, timeout=120)
    if res.rc == 77:
        E.skip("sampling not permitted here")
    chk.check(res.rc == 0, "%s: ember exits 0" % name, res.describe())
    return res, E.load_profile(chk, out, res)


# ---- an OpenMP program -------------------------------------------------
passive = clean_env(OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive")
res, prof = record_c("omp_stages", passive)
got, _ = shares(prof)
check_shares("omp_stages", got, truth_c(res))
res_t, prof_t = record_c("omp_stages", passive, ["--threads"])


def worker_under_stages(prof, what):
    """With --threads: the worker's samples (every thread but the process's
    first, the lowest tid) under main;stage_*;GOMP_parallel, >= 90 %."""
    roots = {f[0]: E.thread_root(f[0]) for f, _ in prof.stacks if E.thread_root(f[0])}
    first = min(roots, key=lambda r: roots[r][1]) if roots else None
    workers = sum(c for f, c in prof.stacks if f[0] != first)
    under = sum(c for f, c in prof.stacks if f[0] != first and stage_of(f) and "GOMP_parallel" in f and "main" in f)
    chk.check(workers >= 30 and under >= 0.9 * workers,
              "%s: %d of the worker's %d samples under main;stage_*;GOMP_parallel (>= 90%%)" %
              (what, under, workers), prof.top())


worker_under_stages(prof_t, "omp_stages --threads")

# ember top decides each stack as it first appears (docs/pools.md, Limits):
# its -o profile has the worker under the same stacks.
top_out = os.path.join(d, "top-omp.folded")
res_top = E.run([E.ember(), "top", "-d", "3", "--threads", "-o", top_out, "--", E.target("omp_stages"), "5"],
                env=passive, timeout=120)
chk.check(res_top.rc in (0, 128 + 15) and "stage_sin" in res_top.stdout,
          "ember top on omp_stages: its table names the stages, exit %d (the command ended by -d)" % res_top.rc,
          res_top.describe())
prof_top = E.load_profile(chk, top_out, res_top)
worker_under_stages(prof_top, "ember top --threads -o")

spin = clean_env(OMP_NUM_THREADS="2")
res_s, prof_s = record_c("omp_stages", spin)
marked = prof_s.count(lambda f: f[-1] == "[OpenMP wait]")
raw = prof_s.count(lambda f: f[-1].startswith("[libgomp"))
chk.check(raw == 0, "omp_stages, spinning: no stack ends in libgomp's own frames (%d do)" % raw, prof_s.top())
chk.check(marked == 0 or re.search(r"OpenMP's threads waited for work .* in [\d.]+% of the samples", res_s.stderr),
          "omp_stages, spinning: %d samples marked [OpenMP wait], and the summary says OpenMP's share" % marked,
          res_s.stderr)

# ---- the same program on LLVM's OpenMP runtime (libomp) ----------------
targets = os.path.join(HERE, "..", "targets")
llvm = os.path.join(d, "omp_stages_llvm")
cc = E.run(["clang", "-O2", "-g", "-fopenmp=libomp", "-I", targets, os.path.join(targets, "omp_stages.c"), "-o",
            llvm, "-lm"], quiet=True)
if cc.rc != 0:
    print("SKIP (loud): LLVM's libomp: clang -fopenmp=libomp cannot build omp_stages.c (make deps-test installs "
          "libomp-14-dev): %s" % cc.stderr.strip()[-300:], flush=True)
else:
    out = os.path.join(d, "omp_llvm.folded")
    res = E.record(["-o", out], [llvm, "3"], env=passive, timeout=120)
    chk.check(res.rc == 0, "omp_stages on libomp: ember exits 0", res.describe())
    prof = E.load_profile(chk, out, res)
    got, _ = shares(prof)
    check_shares("omp_stages on libomp", got, truth_c(res))
    forked = prof.count(lambda f: any(x.startswith("__kmpc_fork_call") for x in f))
    chk.check(forked >= 0.4 * prof.total, "omp_stages on libomp: %d of %d samples under __kmpc_fork_call" %
              (forked, prof.total), prof.top())

# ---- pthreadpool (PyTorch's XNNPACK, QNNPACK) ----------------------------
ptp = os.path.join(d, "pthreadpool_stages")
cc = E.run(["cc", "-O2", "-g", "-I", targets, os.path.join(targets, "pthreadpool_stages.c"), "-o", ptp,
            "-lpthreadpool", "-lm"], quiet=True)
if cc.rc != 0:
    print("SKIP (loud): pthreadpool: pthreadpool_stages.c does not build (make deps-test installs "
          "libpthreadpool-dev): %s" % cc.stderr.strip()[-300:], flush=True)
else:
    out = os.path.join(d, "pthreadpool.folded")
    res = E.record(["--threads", "-o", out], [ptp, "3"], env=clean_env(), timeout=120)
    chk.check(res.rc == 0, "pthreadpool_stages: ember exits 0", res.describe())
    prof = E.load_profile(chk, out, res)
    got, _ = shares(prof)
    check_shares("pthreadpool_stages", got, truth_c(res))
    roots = {f[0]: E.thread_root(f[0]) for f, _ in prof.stacks if E.thread_root(f[0])}
    first = min(roots, key=lambda r: roots[r][1]) if roots else None
    # its work (in a kernel) under the region's dispatch; its
    # waiting marked (between two regions it goes where main's samples
    # around it agree: docs/pools.md, bracketing)
    work = [(f, c) for f, c in prof.stacks if f[0] != first and any(x.startswith("kernel_") for x in f)]
    nwork = sum(c for _, c in work)
    under = sum(c for f, c in work if stage_of(f) and "pthreadpool_parallelize_1d" in f and "main" in f)
    chk.check(nwork >= 30 and under >= 0.9 * nwork,
              "pthreadpool_stages --threads: %d of the worker's %d samples in a kernel under "
              "main;stage_*;pthreadpool_parallelize_1d (>= 90%%)" % (under, nwork), prof.top())
    raw = prof.count(lambda f: f[-1].startswith("[libpthreadpool"))
    chk.check(raw == 0, "pthreadpool_stages: no stack ends in pthreadpool's own frames, its waiting is marked "
              "(%d do)" % raw, prof.top())

# ---- a pool of the program's own ----------------------------------------
res, prof = record_c("pool_stages", clean_env())
got, _ = shares(prof)
check_shares("pool_stages", got, truth_c(res))
stray = prof.count(lambda f: "pool_worker" in f)
chk.check(stray <= 0.1 * prof.total, "pool_stages: %d of %d samples left under the workers' own loop (<= 10%%)" %
          (stray, prof.total), prof.top())

# ---- Python: NumPy (OpenBLAS), OpenCV (TBB), PyTorch (OpenMP) ----------
probe = E.run([PY, "-c", "import numpy, cv2, torch"], quiet=True, timeout=120)
if probe.rc != 0:
    chk.check(True, "SKIP the Python part: %s cannot import numpy, cv2 and torch: %s" %
              (PY, probe.stderr.strip()[-200:]))
    print("SKIP (loud): the Python part of e2e.pools did not run", flush=True)
    chk.finish()
pyenv = clean_env(OPENBLAS_NUM_THREADS="2")
loop_line = None
with open(SCRIPT) as f:
    for n, line in enumerate(f, 1):
        if line.strip() == "f()":
            loop_line = n


def in_loop(frames):
    return stage_of(frames) is not None or any(fr.startswith("main (pool_stages.py:%d)" % loop_line) for fr in frames)


def py_truth(res):
    m = re.search(r"^TRUTH (.*)$", res.stdout, re.M)
    chk.check(m is not None, "pool_stages.py printed its truth", res.describe())
    t = json.loads(m.group(1)) if m else {}
    t.pop("rounds", None)
    loop = t.pop("loop", 0.0) or 1.0
    return {k: 100.0 * v / loop for k, v in t.items()}


folded, ember_out = os.path.join(d, "py.folded"), os.path.join(d, "py.ember")
res = E.record(["-o", folded, "-o", ember_out], [PY, SCRIPT, "8"], env=pyenv, timeout=180)
chk.check(res.rc == 0, "pool_stages.py: ember exits 0", res.describe())
prof = E.load_profile(chk, folded, res)
got, loop_total = shares(prof, in_loop)
truth = py_truth(res)
check_shares("pool_stages.py", got, truth)
chk.check(got.get("(none)", 0.0) <= 10.0, "pool_stages.py: %.1f%% of the loop's %d samples under a stage (>= 90%%)" %
          (100.0 - got.get("(none)", 0.0), loop_total), prof.top())
unknown = prof.count(lambda f: f[0] == "[unknown]")
chk.check(unknown == 0, "pool_stages.py: no [unknown] root (%d)" % unknown)
m = re.search(r"ember: pool threads: (\d+) samples put under the stack that dispatched their work.*; (\d+) not",
              res.stderr)
chk.check(m and int(m.group(1)) > 0 and int(m.group(2)) <= int(m.group(1)) // 10,
          "pool_stages.py: the summary counts pool threads' samples attributed, at most 10%% not", res.stderr)

# The same run's .ember: the worker rows keep their mark.
svg, pb = os.path.join(d, "py.svg"), os.path.join(d, "py.pb.gz")
conv = E.run([E.ember(), "convert", ember_out, "-o", svg, "-o", pb])
chk.check(conv.rc == 0, "convert of the .ember exits 0", conv.describe())
text = open(svg, encoding="utf-8").read() if os.path.exists(svg) else ""
chk.check(re.search(r"ran on worker thread[s]? [^<]*\(\d+\)", text) is not None,
          "the SVG's tooltips name the worker thread that ran a frame's samples")
blob = gzip.open(pb).read() if os.path.exists(pb) else b""
chk.check(b"dispatcher_frames" in blob, "the pprof file labels attributed samples dispatcher_frames")

# --threads: worker threads' samples under the main thread's stages.
tfolded = os.path.join(d, "py-threads.folded")
res = E.record(["--threads", "-o", tfolded], [PY, SCRIPT, "6", "blas", "torch"], env=pyenv, timeout=180)
tprof = E.load_profile(chk, tfolded, res)
main_roots = {f[0] for f, _ in tprof.stacks if f[0].startswith("MainThread")}
wk = sum(c for f, c in tprof.stacks if f[0] not in main_roots and stage_of(f))
wall = sum(c for f, c in tprof.stacks if f[0] not in main_roots)
chk.check(wall >= 50 and wk >= 0.8 * wall, "--threads: %d of the worker threads' %d samples under a stage (>= 80%%)" %
          (wk, wall), tprof.top())

# Without debug files (no libc6-dbg: libc's clone3 and start_thread have no
# names): /usr/lib/debug hidden under an empty tmpfs in a mount namespace
# of ember's own, the workers are still known by the library their thread
# started in.
nodbg = os.path.join(d, "py-nodebug.folded")
if os.geteuid() != 0 or E.run(["unshare", "-m", "true"], quiet=True).rc != 0:
    print("SKIP (loud): the run without debug files needs root and unshare -m", flush=True)
else:
    inner = "mount -t tmpfs none /usr/lib/debug && exec %s" % " ".join(
        shlex.quote(a) for a in [E.ember(), "record", "--threads", "-o", nodbg, "--", PY, SCRIPT, "4", "blas"])
    res = E.run(["unshare", "-m", "sh", "-c", inner], env=pyenv, timeout=180)
    chk.check(res.rc == 0, "without debug files: ember exits 0", res.describe())
    nprof = E.load_profile(chk, nodbg, res)
    main_roots = {f[0] for f, _ in nprof.stacks if f[0].startswith("MainThread")}
    wk = sum(c for f, c in nprof.stacks if f[0] not in main_roots and stage_of(f))
    wall = sum(c for f, c in nprof.stacks if f[0] not in main_roots)
    chk.check(not any("start_thread" in f for f, _ in nprof.stacks) and wall >= 30 and wk >= 0.8 * wall,
              "without debug files (libc's thread start unnamed): %d of the worker threads' %d samples under a "
              "stage (>= 80%%)" % (wk, wall), nprof.top())

# --python-only: a native thread is its dispatcher's Python stack or named.
pfolded = os.path.join(d, "py-only.folded")
res = E.record(["--python-only", "-o", pfolded], [PY, SCRIPT, "4", "blas", "torch"], env=pyenv, timeout=180)
pprof = E.load_profile(chk, pfolded, res)
bare = pprof.count(lambda f: "[unknown]" in f)
named = pprof.count(lambda f: f[0].startswith("[native thread "))
chk.check(bare == 0, "--python-only: no [unknown] frame (%d samples); %d under [native thread NAME]" % (bare, named),
          pprof.top())

# Waiting: many small PyTorch operators, OpenMP's threads idle between
# them; the summary's share of waiting drops with OMP_WAIT_POLICY=passive.
SMALL = os.path.join(HERE, "..", "python", "torch_small_ops.py")
WAITED = re.compile(r"OpenMP's threads waited for work \(spinning, yielding\) in ([\d.]+)% of the samples "
                    r"\(([\d.]+) s of CPU\)")
share, spent = {}, {}
for policy in ("", "passive"):
    wfolded = os.path.join(d, "small%s.folded" % policy)
    res = E.record(["-o", wfolded], [PY, SMALL, "4"], env=clean_env(OMP_WAIT_POLICY=policy) if policy
                   else clean_env(), timeout=120)
    m = WAITED.search(res.stderr)
    share[policy] = float(m.group(1)) if m else 0.0
    spent[policy] = float(m.group(2)) if m else 0.0
    wprof = E.load_profile(chk, wfolded, res)
    under = wprof.count(lambda f: f[-1] == "[OpenMP wait]" and any(x.startswith("small_ops (") for x in f))
    marked = wprof.count(lambda f: f[-1] == "[OpenMP wait]")
    chk.check(marked == 0 or under >= 0.8 * marked, "small ops%s: %d of the %d samples marked [OpenMP wait] under "
              "small_ops (>= 80%%)" % (" (passive)" if policy else "", under, marked), wprof.top())
# (the same wall time: passive makes the idle threads sleep rather than spin;
# what remains is the futex calls that put them to sleep and wake them)
chk.check(share[""] >= 5.0 and spent["passive"] < 0.75 * spent[""],
          "small ops: OpenMP's threads waited %.2f s of CPU (%.1f%% of the samples), %.2f s (%.1f%%) with "
          "OMP_WAIT_POLICY=passive" % (spent[""], share[""], spent["passive"], share["passive"]))

# --no-attribution: the workers keep their own stacks.
nfolded, nember = os.path.join(d, "py-own.folded"), os.path.join(d, "py-own.ember")
res = E.record(["--no-attribution", "-o", nfolded, "-o", nember], [PY, SCRIPT, "4", "blas"], env=pyenv, timeout=180)
nprof = E.load_profile(chk, nfolded, res)
own = nprof.count(lambda f: "clone3" in f or "start_thread" in f)
chk.check(own > 0, "--no-attribution: %d samples under the workers' own clone3/start_thread" % own, nprof.top())
# ember diff says when one run's pool threads went under their dispatcher and the other's did not.
res = E.run([E.ember(), "diff", ember_out, nember, "-o", os.path.join(d, "att.csv")])
chk.check(res.rc == 0 and re.search(r"warning: BASE has \d+ samples of pool threads under the stacks that "
                                    r"dispatched their work and NEW none", res.stderr),
          "diff of an attributed run against a --no-attribution one warns", res.describe())

chk.finish()
