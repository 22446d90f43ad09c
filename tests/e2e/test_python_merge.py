"""python_merge: Python frames merged into native stacks, on one interpreter.

usage: test_python_merge.py --ember E --targets T --python EXE
Runs tests/python/workload.py (known phases, see its docstring) under
`ember record --threads` and checks, with tolerances for a loaded machine:
nested calls and method names (qualnames; from self before 3.11), exact leaf lines,
recursion depth, C->Python callbacks (sorted(key=), map()), generators,
coroutines and non-ASCII names (3.x), a named thread burning its own
function under its Python name ("burner (TID)", the main thread
"MainThread (TID)"), and the mismatch rate the summary reports; with late
reads (zlib_pair.py) and with a stack that changes every microsecond
(raise_gen.py), that frames copied by the kernel at the sample (default) or
read after it (--no-copier, checked against what the sample held) agree with
the native stack; with two threads running at once (zlib_threads.py), that
each sample still gets its own copy; with code objects that live 10 ms
(fresh_code.py), that they are named, each by its own name, although ember
gets to their samples only after they are freed; with samples read after
the target exited, or a target that becomes Python by exec, that they keep
their Python frames.
"""
import os
import re
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
PY_DIR = os.path.join(HERE, "..", "python")
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")


PY = E.python_arg()
E.require_interpreter(PY)
res0 = E.run([PY, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], quiet=True)
VER = tuple(int(x) for x in res0.stdout.strip().split("."))


def marker_lines(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# (LEAF-[A-Z]+)", line)
            if m:
                out[m.group(1)] = n
    return out


LINES = marker_lines(os.path.join(PY_DIR, "workload.py"))
LINES.update(marker_lines(os.path.join(PY_DIR, "workload_py3.py")))
LINES.update(marker_lines(os.path.join(PY_DIR, "ünïcode_loop_😀.py")))

chk = E.Checker("e2e.python_merge[%s]" % PY)
out = os.path.join(E.tmpdir(), "py.folded")
res = E.record(["--threads", "-o", out], [PY, os.path.join(PY_DIR, "workload.py"), "0.8"], timeout=90)
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
chk.check(re.search(r"Python %d\.%d" % VER, res.stderr) is not None, "the summary names Python %d.%d" % VER,
          res.stderr)
prof = E.load_profile(chk, out, res)


def py_names(frames):
    """Python frames of a stack as (name, file, line), root first."""
    got = []
    for f in frames:
        m = PYFRAME.match(f)
        if m:
            got.append((m.group(1), os.path.basename(m.group(2)), int(m.group(3))))
    return got


def samples_with(name):
    """Stacks through Python function `name` that ember did not mark as
    uncertain (those are counted separately: the mismatch rate below)."""
    return [(fr, c) for fr, c in prof.stacks if any(n == name for n, _, _ in py_names(fr[1:]))
            and "[python frames uncertain]" not in fr]


def share(pred, rows):
    tot = sum(c for _, c in rows)
    good = sum(c for fr, c in rows if pred(fr))
    return good, tot


def names(fr):
    return [n for n, _, _ in py_names(fr[1:])]


# nested calls and qualnames, exact leaf line
fwd = "Model.forward"   # co_qualname from 3.11, guessed from self before
rows = samples_with("nested_outer")
good, tot = share(lambda fr: names(fr)[-3:] == ["nested_outer", fwd, "spin"], rows)
chk.check(tot >= 8 and good >= 0.9 * tot, "nested_outer;%s;spin at the leaf: %d of %d" % (fwd, good, tot),
          "\n".join("%5d  %s" % (c, ";".join(names(fr))) for fr, c in rows
                    if names(fr)[-3:] != ["nested_outer", fwd, "spin"]) + "\n" + prof.top())
spin_lines = {}
for fr, c in rows:
    p = py_names(fr[1:])
    if p and p[-1][0] == "spin":
        spin_lines[p[-1][2]] = spin_lines.get(p[-1][2], 0) + c
body = set(range(LINES["LEAF-SPIN"] - 3, LINES["LEAF-SPIN"] + 1))   # while / x= / for / x += lines
in_body = sum(c for l, c in spin_lines.items() if l in body)
chk.check(spin_lines and in_body >= 0.95 * sum(spin_lines.values()) and
          max(spin_lines, key=spin_lines.get) in (LINES["LEAF-SPIN"], LINES["LEAF-SPIN"] - 1),
          "spin's leaf lines are its loop lines, mostly the marked one: %s" % spin_lines)

# recursion: rec(25) is 26 frames
rows = samples_with("rec")
good, tot = share(lambda fr: names(fr).count("rec") == 26 and names(fr)[-1] == "spin", rows)
chk.check(tot >= 8 and good >= 0.9 * tot, "26 rec frames then spin: %d of %d" % (good, tot), prof.top())

# C -> Python callbacks
for caller in ("sort_caller", "map_caller"):
    rows = samples_with(caller)
    good, tot = share(lambda fr: names(fr)[-2:] == [caller, "slow_key"] or names(fr)[-1:] == [caller], rows)
    via = sum(c for fr, c in rows if names(fr)[-2:] == [caller, "slow_key"])
    chk.check(tot >= 8 and good >= 0.9 * tot and via >= 0.5 * tot,
              "%s;slow_key through the C call: %d of %d (%d in slow_key)" % (caller, good, tot, via), prof.top())

# generator
rows = samples_with("gen_values")
good, tot = share(lambda fr: names(fr)[-2:] == ["gen_consumer", "gen_values"], rows)
chk.check(tot >= 8 and good >= 0.9 * tot, "gen_consumer;gen_values: %d of %d" % (good, tot), prof.top())

if VER >= (3, 6):
    rows = samples_with("coro_leaf")
    good, tot = share(lambda fr: names(fr)[-2:] == ["coro_main", "coro_leaf"], rows)
    chk.check(tot >= 8 and good >= 0.8 * tot, "coro_main;coro_leaf: %d of %d" % (good, tot), prof.top())
    rows = samples_with("naïve_函数")
    files = set(f for fr, _ in rows for n, f, _ in py_names(fr[1:]) if n == "naïve_函数")
    chk.check(sum(c for _, c in rows) >= 8 and files == {"ünïcode_loop_😀.py"},
              "non-ASCII function and file names read correctly: %s" % files, prof.top())

# the named thread: its own tid, burning thread_burn
by_thread = {}
for fr, c in prof.stacks:
    by_thread.setdefault(fr[0], []).append((fr, c))
burn_roots = set(fr[0] for fr, _ in samples_with("thread_burn"))
chk.check(len(burn_roots) == 1, "thread_burn runs on one thread: %s" % burn_roots)
if len(burn_roots) == 1:
    root = burn_roots.pop()
    good, tot = share(lambda fr: names(fr)[-1:] == ["thread_burn"], by_thread[root])
    chk.check(tot >= 8 and good >= 0.9 * tot, "that thread's samples are thread_burn: %d of %d" % (good, tot))
    main_roots = set(fr[0] for fr, _ in samples_with("nested_outer"))
    chk.check(root not in main_roots, "and it is not the main thread")
    # Threads carry their Python names (threading.Thread.name), not the comm.
    name = E.thread_root(root)
    chk.check(name is not None and name[0] == "burner", "its root is `burner (TID)`: %s" % root)
    mains = [E.thread_root(r) for r in main_roots]
    chk.check(len(mains) == 1 and mains[0] is not None and mains[0][0] == "MainThread",
              "the main thread's root is `MainThread (TID)`: %s" % main_roots)

# interpreter internals are hidden by default
internals = sum(c for fr, c in prof.stacks if any(f.startswith("_PyEval_EvalFrameDefault") or
                                                          f == "PyEval_EvalFrameEx" for f in fr))
chk.check(internals == 0, "no eval-loop frames in the default view (%d samples)" % internals)

m = re.search(r"Python frames: (\d+) of (\d+) samples", res.stderr)
chk.check(m is not None, "the summary reports the mismatch rate", res.stderr)
if m:
    bad, n = int(m.group(1)), int(m.group(2))
    # This workload changes its Python stack ~20,000 times a second (sorted's
    # key calls): the live read can trail the sample.  The accuracy goal on
    # stable stacks is measured in bench/, not here.
    chk.check(bad <= 0.10 * n, "mismatched Python frames <= 10%% (%d of %d)" % (bad, n))

# Reads checked against the sample (frames read after it: --no-copier, the
# fallback when BPF is not permitted).  zlib_pair.py calls deflate (from
# compress_step) and inflate (from decompress_step) in turn, ~10 ms each; with
# every other read started 3 ms late (test knob), a read alone would find the
# other function in ~15% of samples.  The eval loop's instruction pointer in
# the sample must put each zlib routine under its own caller anyway.
out2 = os.path.join(E.tmpdir(), "late.folded")
env = dict(os.environ, EMBER_TEST_PY_READ_DELAY_US="3000")
res, late_stall = E.record_unstalled(["--no-copier", "-o", out2], [PY, os.path.join(PY_DIR, "zlib_pair.py"), "2.5"],
                                    env=env, timeout=90)
chk.check(res.rc == 0, "late reads: ember exits 0", res.describe())
late = E.load_profile(chk, out2, res)


def nearest_python(fr, idx):
    for j in range(idx - 1, -1, -1):
        m = PYFRAME.match(fr[j])
        if m:
            return m.group(1)
        if fr[j] == "[python frames uncertain]":
            return fr[j]
    return None


def zlib_callers(prof, callers=None):
    """(wrong, total): samples in deflate/inflate, and those whose nearest
    Python frame is not the function that calls it."""
    wrong = total = 0
    callers = callers or {"deflate": "compress_step", "inflate": "decompress_step"}
    for fr, c in prof.stacks:
        for i, f in enumerate(fr):
            own = callers.get(f.split(" ")[0])
            if own:
                total += c
                # deflate under <module> is right too: the module compresses once at import
                wrong += c if nearest_python(fr, i) not in (own, "<module>") else 0
                break
    return wrong, total


wrong, total = zlib_callers(late)
# 0-5 of ~250 wrong as a rule; 13 of 257 once in CI under load (reads later
# than the 3 ms asked for, at pcs the sample's check does not cover); with
# no check against the sample it is ~15%.
if late_stall:   # (raise_gen_run below says why)
    print("NOT CHECKED: late reads: deflate/inflate under their own callers (%d of %d wrong) -- the machine stalled "
          "ember in every run (%s)" % (wrong, total, late_stall), flush=True)
else:
    chk.check(total >= 100 and wrong <= 0.08 * total,
              "late reads: deflate/inflate under their own callers (%d of %d wrong)" % (wrong, total), late.top(12))
# Code-object addresses are reused within milliseconds at start-up (site's
# module code is freed after its import; the script's code objects take its
# place): the Python frame under zlib_pair.py line 14 is its generator
# expression, never a stale name -- or, on 2.7, encodings.search_function:
# str.encode("ascii") on that line looks the codec up (and imports it) on
# its first use, a millisecond a sample can land in (once in CI).
under14 = {}
for fr, c in late.stacks:
    for i in range(len(fr) - 1):
        if fr[i].startswith("<module> (zlib_pair.py:14)") and PYFRAME.match(fr[i + 1]):
            under14[fr[i + 1].split(" (")[0]] = under14.get(fr[i + 1].split(" (")[0], 0) + c
chk.check(set(under14) <= {"<genexpr>", "search_function"}, "frames under zlib_pair.py:14 are its <genexpr>: %s" % under14)
m = re.search(r"(\d+) samples \(([\d.]+)%\) checked against the eval loop's state in the sample, "
              r"(\d+) corrected", res.stderr)
chk.check(m is not None and float(m.group(2)) >= 60 and int(m.group(3)) >= 5,
          "late reads: most samples checked against the sample, the late ones corrected (%s)" %
          (m.group(0) if m else "no summary line"), res.stderr)

# The same late reads with the frames copied by the kernel at the sample (the
# default): each sample still finds its own copy (the last 512 records are
# kept), so nothing needs correcting and every zlib routine is under its own
# caller.
out4 = os.path.join(E.tmpdir(), "late_bpf.folded")
res = E.record(["-o", out4], [PY, os.path.join(PY_DIR, "zlib_pair.py"), "2.5"], env=env, timeout=90)
chk.check(res.rc == 0, "late reads, frames copied at the sample: ember exits 0", res.describe())
ok, text = E.copies(res, 0.95, 100)
chk.check(ok, "late reads: the sample's own copy found for >= 95%% of reads (%s)" % text, res.stderr)
wrong, total = zlib_callers(E.load_profile(chk, out4, res))
chk.check(total >= 100 and wrong <= 0.01 * total,
          "late reads, frames copied at the sample: deflate/inflate under their own callers (%d of %d wrong)"
          % (wrong, total), res.stderr)

# Samples ember drains after the target exited (every run ends so: the
# last tens of milliseconds are read after the exit) keep the frames copied
# at the sample.  With drains put off (test knob) the whole 80 ms loop is
# read after the exit: 10-25% of the zlib samples were frameless before.
# Samples that came before ember had registered their thread with the
# copier have no copy to keep: a handful normally, but CI once held ember
# back so long at the start (18 samples lost, reads 140 ms late) that most
# of the run had none.  Such a run is made again (up to 3 runs), and those
# samples, which the summary counts, are not held against the copies.
out5 = os.path.join(E.tmpdir(), "after_exit.folded")
env5 = dict(os.environ, EMBER_TEST_PY_DRAIN_MS="10000")
res, stall5 = E.record_unstalled(["-F", "499", "-o", out5], [PY, os.path.join(PY_DIR, "zlib_pair.py"), "0.08"],
                                 env=env5, timeout=90)
chk.check(res.rc == 0, "read after the exit: ember exits 0", res.describe())
wrong, total = zlib_callers(E.load_profile(chk, out5, res))
before = E.before_copier(res)
chk.check(total >= 40 and wrong <= 0.03 * total + before,
          "read after the exit: deflate/inflate under their own callers (%d of %d wrong; %d samples before the "
          "copier knew the thread%s)" % (wrong, total, before, "; stalled: " + stall5 if stall5 else ""),
          res.stderr)

# ember held back for 300 ms as the target starts (test knob; a host that
# steals ember's vCPU then): the samples of those 300 ms (~60 at -F 199)
# came before the copier knew the thread, the summary counts them, and the
# samples after them still find their copies.  On a loaded machine the
# target runs for only part of those 300 ms (23 samples seen with the target
# at 40 % of a CPU), hence the low bound of 10.
out6 = os.path.join(E.tmpdir(), "start_stall.folded")
res = E.record(["-F", "199", "-o", out6], [PY, os.path.join(PY_DIR, "zlib_pair.py"), "1.0"],
               env=dict(os.environ, EMBER_TEST_START_STALL_MS="300"), timeout=90)
chk.check(res.rc == 0, "ember late at the start: exits 0", res.describe())
before = E.before_copier(res)
chk.check(10 <= before <= 120,
          "ember late at the start: the summary counts the samples before the copier knew the thread (10-120: %d)"
          % before, res.stderr)
ok, text = E.copies(res, 0.95, 150)
chk.check(ok, "ember late at the start: the later samples find their copies (%s)" % text, res.stderr)

# A native stack cut off at the root (deep_native.py: 50 levels of Python
# -> map() -> Python, ~10 native frames each: past a 32 KB stack copy --
# asked for here; the default 64 KB holds it -- or the 512-frame cap):
# the Python frames the native part lost are shown above it, so the Python
# stack is whole (<module> and 51 rec frames over deflate), and the sample
# still confirms the activations it has (most samples certain).  Before: the root side's Python
# frames were dropped and 97-98% of samples marked uncertain.
out8 = os.path.join(E.tmpdir(), "deep_native.folded")
res, _ = E.record_unstalled(["-F", "499", "--stack-size", "32768", "-o", out8],
                            [PY, os.path.join(PY_DIR, "deep_native.py"), "50", "1.5"],
                            timeout=90)
chk.check(res.rc == 0, "native stack cut off: ember exits 0", res.describe())
deep = E.load_profile(chk, out8, res)
zl = whole = 0
for fr, c in deep.stacks:
    if "deflate" not in fr:
        continue
    zl += c
    names = [f.split(" (")[0] for f in fr if PYFRAME.match(f)]
    whole += c if names == ["<module>"] + ["rec"] * 51 else 0
# (samples before ember had registered the thread with the copier, read
# after the fact, are left out: a stalled machine makes many)
before8 = E.before_copier(res)
chk.check(zl >= 150 and whole >= 0.9 * (zl - before8),
          "native stack cut off: the whole Python stack (<module> + 51 rec) over deflate in %d of %d samples "
          "(>= 90%% of those after the copier knew the thread: %d before)" % (whole, zl, before8), deep.top(5))
m = re.search(r"(\d+) of (\d+) samples \(([\d.]+)%\) disagreed", res.stderr)
# (0.1-1.9% in plain builds; 3.12 under ASan once 15.8%, with only 1.6% of
# samples checked: not understood yet.  Before: 97-98%.)
chk.check(m is not None and float(m.group(3)) <= 25.0,
          "native stack cut off: at most 25%% uncertain (%s)" % (m.group(0) if m else "no mismatch line"), res.stderr)
# The summary says why the stacks were cut, and what helps.
cut = re.search(r"(\d+) samples, \d+ lost, (\d+) truncated", res.stderr)
why = re.search(r"of stacks were (cut off by the stack copy: (raise --stack-size|deeper than 64 KB of stack)|"
                r"deeper than 512 native frames)",
                res.stderr)
chk.check(cut is not None and int(cut.group(2)) >= 0.5 * int(cut.group(1)) and why is not None,
          "native stack cut off: the summary counts the cut stacks and says why (%s; %s)"
          % (cut.group(0) if cut else "no count", why.group(1) if why else "no reason"), res.stderr)

# A native program that becomes Python by exec (a wrapper ending in `exec
# python ...`): ember looks for the runtime again as soon as the process
# maps new code, not at the next step of its back-off (up to 0.5 s), and
# the copier wakes ember for the new program's first samples again.
out7 = os.path.join(E.tmpdir(), "exec.folded")
res, _ = E.record_unstalled(["-F", "999", "-o", out7],
                            [E.target("burn_exec"), "0.4", PY, os.path.join(PY_DIR, "zlib_pair.py"), "0.6"], timeout=90)
chk.check(res.rc == 0, "exec'd later: ember exits 0", res.describe())
wrong, total = zlib_callers(E.load_profile(chk, out7, res))
chk.check(total >= 200 and wrong <= 0.03 * total,
          "exec'd later: deflate/inflate under their own callers (%d of %d wrong)" % (wrong, total), res.stderr)
m = re.search(r"(\d+) of (\d+) samples before its runtime was found", res.stderr)
chk.check(m is not None and int(m.group(1)) >= 200,
          "exec'd later: the summary says how many samples came before the runtime was found (%s)"
          % (m.group(0) if m else "no such line"), res.stderr)

# Two threads at once (zlib_threads.py: deflate under compress_worker in
# one, inflate under decompress_worker in the other, the GIL let go inside
# both): on two CPUs a sample's record may arrive while ember reads the
# other thread's sample; it is kept, and its own sample's read finds it.
# How many are kept varies from run to run (0 to over 100 on a loaded
# 2-CPU machine): too few to judge is said, not failed.
out5 = os.path.join(E.tmpdir(), "threads_bpf.folded")
res, _ = E.record_unstalled(["-F", "999", "-o", out5], [PY, os.path.join(PY_DIR, "zlib_threads.py"), "2.5"],
                            env=dict(os.environ, EMBER_BPF_STATS="1"), timeout=90)
chk.check(res.rc == 0, "two threads, frames copied at the sample: ember exits 0", res.describe())
ok, text = E.copies(res, 0.95, 1000)
chk.check(ok, "two threads: the sample's own copy found for >= 95%% of reads (%s)" % text, res.stderr)
m = re.search(r"records: (\d+) woke ember \(\d+ code objects named on arrival\), (\d+) read where they "
              r"arrived, (\d+) kept for a later read \((\d+) read\)", res.stderr)
chk.check(m is not None, "two threads: the copier's records are accounted for", res.stderr)
# ember drains on a timer; the copier wakes it only for a record it must read
# at once (a code object or thread first seen: start-up), not per sample.
nsamples = re.search(r"(\d+) samples, \d+ lost", res.stderr)
chk.check(m is not None and nsamples is not None and int(m.group(1)) <= 0.05 * int(nsamples.group(1)),
          "two threads: the copier woke ember for <= 5%% of samples (%s of %s)"
          % (m.group(1) if m else "?", nsamples.group(1) if nsamples else "?"), res.stderr)
if m and (os.cpu_count() or 1) >= 2:
    # A sample the kernel dropped (its ring full: "N lost") leaves its record unread.
    kept, read_kept = int(m.group(3)), int(m.group(4))
    lost = re.search(r"samples, (\d+) lost", res.stderr)
    lost = int(lost.group(1)) if lost else 0
    if kept >= 10:
        chk.check(read_kept + lost >= 0.9 * kept,
                  "two threads on %d CPUs: records kept for a later read, >= 90%% of them read or their "
                  "sample lost (%s; %d samples lost)" % (os.cpu_count(), m.group(0), lost), res.stderr)
    else:
        print("NOT CHECKED: two threads on %d CPUs: only %d records kept for a later read, too few to "
              "judge (%s)" % (os.cpu_count(), kept, m.group(0)), flush=True)
wrong, total = zlib_callers(E.load_profile(chk, out5, res),
                            {"deflate": "compress_worker", "inflate": "decompress_worker"})
chk.check(total >= 500 and wrong <= 0.02 * total,
          "two threads: deflate/inflate under their own thread's function (%d of %d wrong or uncertain)"
          % (wrong, total), res.stderr)

# The same with the copier's unrolled variant (EMBER_BPF_UNROLLED), the one
# kernels without bpf_loop (before 5.17) load: it copies as the other does
# (unit.copier_variants compares their records byte for byte).
out5u = os.path.join(E.tmpdir(), "threads_unrolled.folded")
res, _ = E.record_unstalled(["-F", "999", "-o", out5u], [PY, os.path.join(PY_DIR, "zlib_threads.py"), "1.5"],
                            env=dict(os.environ, EMBER_BPF_UNROLLED="1"), timeout=90)
chk.check(res.rc == 0 and "its unrolled variant" in res.stderr,
          "unrolled copier: ember exits 0 and the summary names the variant", res.describe())
ok, text = E.copies(res, 0.95, 600)
chk.check(ok, "unrolled copier: the sample's own copy found for >= 95%% of reads (%s)" % text, res.stderr)
wrong, total = zlib_callers(E.load_profile(chk, out5u, res),
                            {"deflate": "compress_worker", "inflate": "decompress_worker"})
chk.check(total >= 300 and wrong <= 0.02 * total,
          "unrolled copier: deflate/inflate under their own thread's function (%d of %d wrong or uncertain)"
          % (wrong, total), res.stderr)

# Exceptions and generators (raise_gen.py): the Python stack changes every
# microsecond.  By default the kernel copies the frames at each sample (a BPF
# program on the perf event), so they are of the sample's instant: measured
# 0.4-2.4% uncertain, what is left being activations caught entering or
# leaving (the eval loop runs, its frame is not linked yet or any more).
# Read after the sample (--no-copier), reads trailing it by tens of microseconds
# are nearly always stale; what saves them is the sample's own record of
# each activation: the instruction pointer and frame at the places the
# interpreter's DWARF names (every interpreter here has DWARF: pyenv builds
# are compiled with -g, Debian's python3 has python3.11-dbg).  Measured
# 1.6-3.9% uncertain on 3.8, 3.9 and 3.11+; 5-9% on 2.7, 3.6, 3.7, 3.10,
# whose builds describe the eval loop's variables at few pcs (the frame
# holder at sampled pcs is learnt pooled there); before these checks,
# 18-34% on <= 3.10.
# A run in which the machine stalled ember (a stolen vCPU: samples lost,
# reads tens of milliseconds late) is run again, up to 3 times; the bound
# is not asserted if every run was stalled (said loudly): it is about
# reads made promptly.  (CI once: 172 samples lost and reads 61 ms late on
# average, 18% uncertain.)
def raise_gen_run(label, flags, limit):
    out = os.path.join(E.tmpdir(), "raise_gen.folded")
    res, stall = E.record_unstalled(["-F", "999", "-o", out] + flags, [PY, os.path.join(PY_DIR, "raise_gen.py"), "2"],
                                    timeout=90)
    chk.check(res.rc == 0, "%s: ember exits 0" % label, res.describe())
    m = re.search(r"(\d+) of (\d+) samples \(([\d.]+)%\) disagreed", res.stderr)
    if stall:
        print("NOT CHECKED: %s at -F 999: at most %.0f%% uncertain -- the machine stalled ember in every run (%s; "
              "%s)" % (label, limit, stall, m.group(0) if m else "no mismatch line"), flush=True)
    else:
        chk.check(m is not None and int(m.group(2)) >= 1000 and float(m.group(3)) <= limit,
                  "%s at -F 999: at most %.0f%% uncertain (%s)" % (label, limit, m.group(0) if m else "no mismatch line"),
                  res.stderr)
    # A generator is never a thread's outermost frame: a read that ends at
    # one caught it yielding (its link to the caller just cleared) and is
    # torn (the frame's owner says so from 3.11, the code's flags before).
    # Before that check, 0.4-3% of samples showed "gen" without its callers.
    rg = E.load_profile(chk, out, res)
    outer_gen = 0
    for fr, c in rg.stacks:
        first = next((f for f in fr if PYFRAME.match(f)), None)
        outer_gen += c if first and first.startswith("gen (") else 0
    chk.check(outer_gen == 0, "%s: no stack starts at the generator (%d do)" % (label, outer_gen), rg.top(12))
    return res


# Code objects that live 10 ms each (fresh_code.py), with ember made 40 ms
# late at every drain (test knob; a host that steals ember's CPU, seen in
# CI): each gen_N is freed and its memory reused long before ember gets to
# its samples.  ember names it from the objects the copier took with the
# code object's first sample (its name, file name and line table), and the
# sample's own time picks the right one of the objects an address held.
# Before those copies: 53-68% uncertain and ~25% of the functions named;
# before the time check, every other odd gen_N took its predecessor's name
# (the allocator puts the name, file name and line table of the function
# after next at the same addresses: ~70% named).
out6 = os.path.join(E.tmpdir(), "fresh.folded")
count_file = os.path.join(E.tmpdir(), "fresh.count")
# (Run again when the host stalled ember beyond the knob: with samples
# lost, whole functions go unsampled -- CI once: 314 lost, 166 of 194.)
res, _ = E.record_unstalled(["-F", "999", "-o", out6],
                            [PY, os.path.join(PY_DIR, "fresh_code.py"), "2", "10", count_file],
                            env=dict(os.environ, EMBER_TEST_STALL_MS="40"), timeout=90)
chk.check(res.rc == 0, "fresh code objects: ember exits 0", res.describe())
fresh = E.load_profile(chk, out6, res)
created = int(open(count_file).read()) if os.path.exists(count_file) else 0
named = mixed = uncertain = 0
names_seen = set()
for fr, c in fresh.stacks:
    uncertain += c if "[python frames uncertain]" in fr else 0
    for f in fr:
        g = re.match(r"^gen_(\d+)_* \(<gen (\d+)>:\d+\)$", f)
        if g:
            named += c if g.group(1) == g.group(2) else 0
            mixed += c if g.group(1) != g.group(2) else 0
            names_seen.add(g.group(1))
            break
chk.check(named >= 1000 and uncertain <= 0.05 * (named + uncertain) and mixed == 0,
          "fresh code objects, ember late: %d samples name their gen_N, %d uncertain (<= 5%%), %d mixed names"
          % (named, uncertain, mixed), fresh.top(12))
chk.check(created >= 50 and len(names_seen) >= 0.9 * created,
          "fresh code objects, ember late: %d of the %d functions run appear under their own names (>= 90%%)"
          % (len(names_seen), created), fresh.top(12))

# Modules imported one after another (fresh_modules.py), each one's code
# burning 10 ms and freed when its import is done, ember 40 ms late at
# every drain: a module's line table is longer than the first 256 bytes the
# copier takes of every object, so the copier takes a line table whole (up
# to 4 KB more); read live, the rest would be gone with the code object
# (27-64% of the samples uncertain, 26-41 of ~165 modules named).
mod_dir = os.path.join(E.tmpdir(), "modules")
os.makedirs(mod_dir, exist_ok=True)
out8 = os.path.join(E.tmpdir(), "modules.folded")
# (Run again on a stalled machine, as above: CI once 515 samples lost.)
res, _ = E.record_unstalled(["-F", "999", "-o", out8],
                            [PY, os.path.join(PY_DIR, "fresh_modules.py"), "2", "10", mod_dir, count_file],
                            env=dict(os.environ, EMBER_TEST_STALL_MS="40"), timeout=90)
chk.check(res.rc == 0, "modules freed once imported: ember exits 0", res.describe())
mods = E.load_profile(chk, out8, res)
created = int(open(count_file).read()) if os.path.exists(count_file) else 0
named = at_loop = uncertain = 0
seen = set()
for fr, c in mods.stacks:
    uncertain += c if "[python frames uncertain]" in fr else 0
    for f in fr:
        g = re.match(r"^<module> \(fresh_mod_(\d+)_*\.py:(\d+)\)$", f)
        if g:
            i = int(g.group(1))
            loop = 200 + 16 * (i // 2 % 3) + 4   # fresh_modules.py filler(i) + 4
            named += c
            at_loop += c if int(g.group(2)) in (loop, loop + 1) else 0
            seen.add(i)
            break
chk.check(created >= 50 and len(seen) >= 0.9 * created,
          "modules freed once imported, ember late: %d of the %d modules appear under their own names (>= 90%%)"
          % (len(seen), created), mods.top(12))
# (>= 500: a host that slows the target runs fewer modules -- CI once
# 103 modules, 911-945 samples in them, all named right)
chk.check(named >= 500 and at_loop >= 0.95 * named and uncertain <= 0.05 * mods.total,
          "modules freed once imported, ember late: %d of %d samples at their loop's lines (>= 95%%), %d of %d "
          "uncertain (<= 5%%)" % (at_loop, named, uncertain, mods.total), mods.top(12))

# Copies of one code object under new names of one length (fresh_code.py
# replace): each new one's header, name, file name, line table and
# bytecode at the addresses of a freed one's, so every pointer ember and
# the copier compare is equal.  The name's hash (computed when a name is
# interned, as the compiler does) tells them apart, and on 3.12+ the code
# object's own number (co_version) also when the name was never hashed.
# Before: 2-3 names shown for ~200 functions, on every interpreter.  (Read
# after the sample, --no-copier: functions of 30 ms, run again on a stalled
# machine; a read that comes after the function is gone cannot name it.)
modes = (["replace-interned"] if VER >= (3, 8) else []) + (["replace"] if VER >= (3, 12) else [])
for mode in modes:
    for extra in ([], ["--no-copier"]):
        label = "code.replace() copies, %s%s" % (mode, ", --no-copier" if extra else "")
        out7 = os.path.join(E.tmpdir(), "replace.folded")
        secs, life = ("3", "30") if extra else ("2", "10")
        res, _ = E.record_unstalled(extra + ["-F", "999", "-o", out7],
                                    [PY, os.path.join(PY_DIR, "fresh_code.py"), secs, life, count_file, mode],
                                    timeout=90)
        chk.check(res.rc == 0, "%s: ember exits 0" % label, res.describe())
        prof = E.load_profile(chk, out7, res)
        created = int(open(count_file).read()) if os.path.exists(count_file) else 0
        seen = set()
        for fr, c in prof.stacks:
            for f in fr:
                g = re.match(r"^gen_(\d+) \(fresh_code\.py:\d+\)$", f)
                if g:
                    seen.add(g.group(1))
        chk.check(created >= 50 and len(seen) >= 0.9 * created,
                  "%s: %d of the %d functions run appear under their own names (>= 90%%)"
                  % (label, len(seen), created), prof.top(8))

# --gil: two threads running Python take turns with the GIL (every 5 ms);
# the one a sample finds running Python code holds it, so --gil keeps
# nearly all of python_burn.  Before 3.13 the holder is not in the thread
# state: read after the sample (at a drain, 50 ms later then) it was a
# later instant's, and ~half the samples were left out (3.11: 113 of 204).
# Samples of a thread on the CPU handing the GIL over (take_gil/drop_gil)
# are rightly left out: 1-4% here, 13% once in CI on a loaded host; hence
# the 25% bound.  (2.7's GIL is a lock the waiting thread keeps trying on
# the CPU: half its samples are rightly left out there.)
if VER >= (3, 0):
    out9 = os.path.join(E.tmpdir(), "gil.folded")
    res, _ = E.record_unstalled(["--gil", "--threads", "-o", out9], [PY, os.path.join(PY_DIR, "gil.py"), "2", "pair"])
    gil = E.load_profile(chk, out9, res)
    burn = gil.count(lambda fr: any(f.startswith("python_burn") for f in fr))
    m = re.search(r"--gil: (\d+) samples of threads not holding the GIL left out", res.stderr)
    left_out = int(m.group(1)) if m else 0
    chk.check(burn >= 100 and left_out <= 0.25 * (burn + left_out) and "does not record" not in res.stderr,
              "--gil, two threads running Python: python_burn kept (%d), at most 25%% left out (%d)"
              % (burn, left_out), res.stderr)

# Methods of fresh objects, 10 ms a call (short_calls.py), at the default
# 99 Hz: ember reads the copies every 250 ms, when most calls are over.  Up
# to 3.10 a method's class comes from its first argument, cleared when the
# call returns (self freed with it), so the copier takes the first argument
# with the frame, and self's type, at the sample; read live (after the
# target's exit for the last drain), 40-45% of the samples would show a bare
# `forward` / `build`.
out10 = os.path.join(E.tmpdir(), "short_calls.folded")
res, _ = E.record_unstalled(["-o", out10], [PY, os.path.join(PY_DIR, "short_calls.py"), "2", "10"])
calls = E.load_profile(chk, out10, res)
for meth in ("forward", "build"):
    named = calls.count(lambda fr: any(n == "Model." + meth for n, _, _ in py_names(fr)))
    bare = calls.count(lambda fr: any(n == meth for n, _, _ in py_names(fr)))
    chk.check(named >= 50 and named >= 0.95 * (named + bare),
              "methods of objects freed by the read: %d samples under Model.%s, %d under a bare %s (<= 5%%)"
              % (named, meth, bare, meth), calls.top())

res = raise_gen_run("exceptions/generators, frames copied at the sample", [], 4.0)
ok, text = E.copies(res, 0.9, 1000)
chk.check(ok, "the kernel copied the frames at >= 90%% of the samples (%s)" % text, res.stderr)
# (8.5% once on python3.11d under ASan in CI, 0.9-2.1% in plain builds.)
res = raise_gen_run("exceptions/generators, frames read after the sample (--no-copier)", ["--no-copier"],
                    10.0 if VER >= (3, 11) or VER in ((3, 8), (3, 9)) else 16.0)
chk.check("eval loop from DWARF" in res.stderr, "--no-copier: the eval loop's DWARF is used", res.stderr)
chk.check("copied by the kernel" not in res.stderr, "--no-copier: no frames copied by the kernel", res.stderr)
chk.finish()
