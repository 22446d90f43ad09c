"""ember's end-to-end checks inside the emulated arm64 guest (Debian 12,
its python3 3.11 with NumPy and OpenCV, no pytest).

usage: guest-test.py --ember PATH --targets DIR
Run by vm-init.sh from the host's share (run.sh copies this file, emberlib.py
from tests/e2e, ember and the aarch64 targets there).  Each check prints
PASS, FAIL or SKIP with its reason; a summary follows; exit status 1 when a
check failed.  The share's `only` file may name the checks to run.

  env        kernel, Python, NumPy's BLAS, OpenCV, BTF (information)
  perf       perf record --call-graph dwarf works in the guest
  bpf        the kernel loads perf_event BPF programs (bpftool feature probe)
  chain      (a) a C target -O2 -fomit-frame-pointer: main;a;b;hot in order
  numpy_cv   (b) NumPy + OpenCV under Python: merged stacks, lines, BPF copier
  python_only (c) --python-only: Python frames only, lines right
  attach     (d) ember record -p PID on a running Python program
  diff       (e) ember diff of two recorded runs of the C target
  blas       (f) OpenBLAS's kernel (assembly, no CFI): share of its samples
             whose stack reaches the Python caller and the interpreter's entry
  cost       (g) CPU cost per sample: ember record -F 99 against
             perf record -F 99 --call-graph dwarf, same workload
  dump       ember dump -p on a Python program (ptrace's AArch64 registers):
             the spinning main thread and the sleeping thread, each at its
             function, locals read; the target not left stopped
  idle       ember record --idle (the sched_switch tracer's AArch64
             registers): sleep and compute, each near its wall share
  package    the arm64 Debian package (make package-arm64), when run.sh
             was given one: dpkg -i installs it (its Depends satisfied by the
             guest's libraries, no network), the installed ember records the
             C target, the completion in place (the man pages in the package:
             the guest's dpkg leaves /usr/share/man out), dpkg -r removes it
"""
import json
import os
import re
import resource
import subprocess
import sys
import time
import traceback

SHARE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SHARE)
import emberlib as E  # noqa: E402  (the e2e helpers: run, record, folded parser)

OUT = os.path.join(SHARE, "out")
PY = "/usr/bin/python3"
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")
RESULTS = []
NUMBERS = []


def note(text):
    print(text, flush=True)


def number(key, value):
    """A measured value for the summary (and bench/RESULTS.md)."""
    NUMBERS.append((key, value))
    note("  number: %s = %s" % (key, value))


def sh(cmd, timeout=120, env=None):
    """Runs cmd quietly; (rc, stdout, stderr)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "TIMEOUT", "", "timed out after %d s" % timeout
    except OSError as e:
        return "ERROR", "", str(e)


def write_script(name, text):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def marker_lines(path):
    """{'LINE-X': n} for the `# LINE-X` markers of a script."""
    got = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# (LINE-[A-Z]+)", line)
            if m:
                got[m.group(1)] = n
    return got


def py_frames(frames):
    """(index, name, line) of the Python frames of a stack, root first."""
    got = []
    for i, f in enumerate(frames):
        m = PYFRAME.match(f)
        if m:
            got.append((i, m.group(1), int(m.group(3))))
    return got


def summary_line(stderr, pattern):
    m = re.search(pattern, stderr)
    return m.group(0) if m else None


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(cmd, timeout=600, env=None):
    """Runs cmd; (rc, stdout, stderr, CPU seconds of it and its descendants)."""
    before = children_cpu()
    rc, out, err = sh(cmd, timeout=timeout, env=env)
    return rc, out, err, children_cpu() - before


def show(res, prof=None):
    note(E._indent(res.describe()))
    if prof is not None:
        note(E._indent(prof.top(8)))


# ---------------------------------------------------------------- the guest

def check_env():
    note("  kernel: %s" % os.uname().release)
    parts = sorted(set(re.findall(r"^CPU part\s*:\s*(\S+)", open("/proc/cpuinfo").read(), re.M)))
    note("  CPU part: %s (0xd0b: Cortex-A76); %d CPUs" % (" ".join(parts), os.cpu_count()))
    rc, out, err = sh([PY, "-c", BLAS_PROBE], timeout=300)
    note(E._indent(out + err))
    btf = os.path.exists("/sys/kernel/btf/vmlinux")
    note("  /sys/kernel/btf/vmlinux: %s" % ("present" if btf else "missing"))
    for k in ("perf_event_paranoid", "perf_event_max_sample_rate", "perf_event_max_stack"):
        with open("/proc/sys/kernel/" + k) as f:
            note("  kernel.%s = %s" % (k, f.read().strip()))
    return "INFO", "kernel %s, BTF %s" % (os.uname().release, "present" if btf else "missing")


# Which BLAS NumPy runs (the library mapped after a dot product), NumPy's and
# OpenCV's versions.
BLAS_PROBE = r'''
import sys, numpy as np
a = np.ones((64, 64)); a @ a
print("python", sys.version.split()[0], "numpy", np.__version__)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l or "lapack" in l})
print("BLAS mapped:", " ".join(libs))
import cv2
print("opencv", cv2.__version__)
'''


def check_perf():
    data = os.path.join("/tmp", "perf-probe.data")
    t0 = time.monotonic()
    rc, out, err = sh(["perf", "record", "-F", "99", "-e", "cpu-clock", "--call-graph", "dwarf",
                       "-o", data, "--", PY, "-c", SPIN_PY, "2"], timeout=300)
    took = time.monotonic() - t0
    if rc != 0:
        return "FAIL", "perf record exited %s: %s" % (rc, err.strip()[-400:])
    m = re.search(r"\((\d+) samples\)", err)
    n = int(m.group(1)) if m else 0
    # --no-inline: perf would ask binutils' addr2line, which the guest lacks.
    rc, rep, err2 = sh(["perf", "report", "-i", data, "--stdio", "--no-children", "--no-inline", "-G"],
                       timeout=600)
    # The eval loop with the interpreter's entry among its callers: DWARF
    # unwinding in perf reaches main.
    deep = "_PyEval_EvalFrameDefault" in rep and ("Py_BytesMain" in rep or "Py_RunMain" in rep)
    chains = len(re.findall(r"_PyEval_EvalFrameDefault", rep))
    note(E._indent("\n".join(rep.splitlines()[:40])))
    os.unlink(data)
    if n < 20 or rc != 0:
        return "FAIL", "perf record: %d samples in %.1f s; perf report exit %s %s" % (n, took, rc, err2[-200:])
    return ("PASS" if deep else "FAIL",
            "perf record -e cpu-clock --call-graph dwarf: %d samples, call chains through the eval loop: %d"
            % (n, chains))


SPIN_PY = r'''
import sys, time
def spin(secs):
    end = time.monotonic() + secs
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i
    return x
spin(float(sys.argv[1]))
'''


def check_bpf():
    rc, out, err = sh(["bpftool", "feature", "probe", "kernel"], timeout=300)
    if rc != 0:
        return "FAIL", "bpftool feature probe kernel exited %s: %s" % (rc, err.strip()[-300:])
    helpers = set()
    section = None
    for line in out.splitlines():
        if line.startswith("eBPF helpers supported for program type "):
            section = line.split("program type ")[1].rstrip(":")
        elif section == "perf_event" and line.strip().startswith("- "):
            helpers.add(line.strip()[2:])
    want = ["bpf_probe_read_user", "bpf_get_current_task", "bpf_ringbuf_output", "bpf_perf_event_output",
            "bpf_get_current_pid_tgid"]
    have = [w for w in want if w in helpers]
    prog = "eBPF program_type perf_event is available" in out
    note("  program type perf_event: %s; its helpers: %s; missing: %s" %
         (prog, " ".join(have), " ".join(w for w in want if w not in helpers) or "none"))
    jit = open("/proc/sys/net/core/bpf_jit_enable").read().strip() if os.path.exists(
        "/proc/sys/net/core/bpf_jit_enable") else "?"
    note("  net.core.bpf_jit_enable = %s" % jit)
    ok = prog and "bpf_probe_read_user" in helpers
    return ("PASS" if ok else "FAIL",
            "perf_event BPF programs %s; %d of %d helpers a frame copier uses" % (
                "load" if prog else "are NOT available", len(have), len(want)))


# ---------------------------------------------------------------- ember

def record(name, opts, cmd, timeout=300, env=None):
    """ember record OPTS -o OUT/name.folded -- CMD: (result, profile)."""
    folded = os.path.join(OUT, name + ".folded")
    res = E.record(["-o", folded] + opts, cmd, timeout=timeout, env=env, quiet=True)
    prof = E.parse_folded(folded) if os.path.exists(folded) else E.Profile([], ["no output"], "")
    with open(os.path.join(OUT, name + ".stderr"), "w") as f:
        f.write(res.describe())
    return res, prof


def summary(res):
    """The summary's count line, for the report."""
    return summary_line(res.stderr, r"\d+ samples, \d+ lost, \d+ truncated, \d+ unwind failures") or "no summary"


# Allowed below hot (towards the leaf): its inlined helpers and the vDSO
# clock read that tgt_now makes.
CHAIN_LEAVES = ("mix", "tgt_now", "__kernel_clock_gettime", "clock_gettime", "__clock_gettime",
                "[vdso]")


def chain_leaf_ok(frames):
    vdso = tuple(f for f in frames if "vdso" in f)
    return E.chain_at_leaf(frames, ("main", "a", "b", "hot"), CHAIN_LEAVES + vdso)


def check_chain():
    res, prof = record("chain", ["-o", os.path.join(OUT, "chain.ember")], [E.target("chain"), "3"])
    if res.rc != 0 or prof.total == 0:
        show(res, prof)
        return "FAIL", "ember exit %s, %d samples" % (res.rc, prof.total)
    good = prof.count(chain_leaf_ok)
    raw = E.raw_address_frames(prof)
    cpu = E.stdout_value(res, "cpu_seconds") or 0
    note("  %s; target CPU %.2f s" % (summary(res), cpu))
    number("chain: samples with main;a;b;hot in order", "%d of %d (%.1f%%)" % (good, prof.total,
                                                                          100.0 * good / prof.total))
    problems = []
    if good < 0.9 * prof.total:
        problems.append("main;a;b;hot in only %d of %d samples" % (good, prof.total))
    if prof.total < 0.5 * 99 * cpu:
        problems.append("%d samples for %.2f CPU s at 99 Hz (< 50%%)" % (prof.total, cpu))
    if raw:
        problems.append("raw addresses as frame names: %s" % raw[:5])
    if prof.problems:
        problems.append("folded format: %s" % prof.problems[:3])
    if problems:
        show(res, prof)
        return "FAIL", "; ".join(problems)
    return "PASS", "main;a;b;hot(+mix) in %d of %d samples (-O2 -fomit-frame-pointer, DWARF)" % (
        good, prof.total)


NP_CV_PY = r'''
import os, sys, time
import numpy as np
import cv2
cv2.setNumThreads(1)


def blur_stage(img, secs):
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        cv2.GaussianBlur(img, (31, 31), 0)  # LINE-BLUR
        n += 1
    return n


def sort_stage(arr, secs):
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        np.sort(arr, kind="quicksort")  # LINE-SORT
        n += 1
    return n


def main(secs):
    rng = np.random.default_rng(1)
    img = (rng.random((512, 512)) * 255).astype(np.uint8)
    arr = rng.random(300000)
    print("blurs=%d" % blur_stage(img, secs))  # LINE-MAINBLUR
    print("sorts=%d" % sort_stage(arr, secs))  # LINE-MAINSORT
    print("pid=%d" % os.getpid())


main(float(sys.argv[1]))  # LINE-MODULE
'''


def native_under(frames, idx, pred):
    """True if a native frame after (leafward of) frames[idx] satisfies pred."""
    return any(pred(f) for f in frames[idx + 1:] if not PYFRAME.match(f))


def stage_stats(prof, stage, line, native_pred):
    """For the samples through Python function `stage`: (total, with the
    native callee matching native_pred under it, those also at `line`,
    those whose Python frames are <module>;main;stage in order)."""
    tot = native = at_line = ordered = 0
    for frames, c in prof.stacks:
        py = py_frames(frames)
        hit = [p for p in py if p[1] == stage]
        if not hit or "[python frames uncertain]" in frames:
            continue
        idx, _, ln = hit[-1]
        tot += c
        # NumPy's own Python wrappers (np.sort) may sit below the stage.
        upto = [p[1] for p in py if p[0] <= idx]
        if upto[-3:] == ["<module>", "main", stage]:
            ordered += c
        if native_under(frames, idx, native_pred):
            native += c
            if ln == line:
                at_line += c
    return tot, native, at_line, ordered


def is_cv(f):
    return "cv::" in f or "opencv" in f.lower()


def is_np_sort(f):
    return "sort" in f.lower() or "_multiarray_umath" in f


def check_numpy_cv():
    script = write_script("np_cv.py", NP_CV_PY)
    lines = marker_lines(script)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    res, prof = record("numpy_cv", [], [PY, script, "4"], env=env)
    if res.rc != 0 or prof.total == 0:
        show(res, prof)
        return "FAIL", "ember exit %s, %d samples" % (res.rc, prof.total)
    note("  %s" % summary(res))
    copied, copy_text = E.copies(res, 0.8, 20)
    note("  %s" % copy_text)
    version = summary_line(res.stderr, r"Python \d+\.\d+\S*")
    problems = []
    for stage, line, pred, what in (("blur_stage", lines["LINE-BLUR"], is_cv, "OpenCV"),
                                    ("sort_stage", lines["LINE-SORT"], is_np_sort, "NumPy sort")):
        tot, native, at_line, ordered = stage_stats(prof, stage, line, pred)
        number("numpy_cv: %s samples / with %s frames under it / at line %d / under <module>;main"
               % (stage, what, line), "%d / %d / %d / %d" % (tot, native, at_line, ordered))
        if tot < 20:
            problems.append("%s has %d samples (< 20)" % (stage, tot))
        elif native < 0.7 * tot or at_line < 0.95 * native or ordered < 0.9 * tot:
            problems.append("%s: %d samples, %d with %s frames under it, %d of those at line %d, "
                            "%d under <module>;main" % (stage, tot, native, what, at_line, line, ordered))
    if not version:
        problems.append("the summary names no Python version")
    if not copied:
        problems.append("the BPF copier did not copy the frames: %s" % copy_text)
    if problems:
        show(res, prof)
        return "FAIL", "; ".join(problems)
    return "PASS", "%s; Python over OpenCV and NumPy frames, lines right; %s" % (version, copy_text)


def check_python_only():
    script = write_script("np_cv.py", NP_CV_PY)
    lines = marker_lines(script)
    res, prof = record("python_only", ["--python-only"], [PY, script, "2"],
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if res.rc != 0 or prof.total == 0:
        show(res, prof)
        return "FAIL", "ember exit %s, %d samples" % (res.rc, prof.total)
    # The marker ember puts on a stack whose Python frames it doubts is not a
    # native frame.
    def python_frame(f):
        return PYFRAME.match(f) or f == "[python frames uncertain]"

    pure = prof.count(lambda fr: all(python_frame(f) for f in fr))
    native = sorted({f for fr, _ in prof.stacks for f in fr if not python_frame(f)})

    def through(stage, line):
        return prof.count(lambda fr: (stage, line) in [(n, ln) for _, n, ln in py_frames(fr)])

    blur = through("blur_stage", lines["LINE-BLUR"])
    sort = through("sort_stage", lines["LINE-SORT"])
    number("python_only: samples of only Python frames / blur line / sort line",
           "%d of %d / %d / %d" % (pure, prof.total, blur, sort))
    problems = []
    if pure < 0.95 * prof.total:
        problems.append("only %d of %d samples are Python frames alone (others: %s)" %
                        (pure, prof.total, native[:8]))
    if blur < 10 or sort < 10:
        problems.append("blur_stage:%d has %d samples, sort_stage:%d %d (want >= 10 each)" %
                        (lines["LINE-BLUR"], blur, lines["LINE-SORT"], sort))
    if problems:
        show(res, prof)
        return "FAIL", "; ".join(problems)
    return "PASS", "%d of %d samples Python-only, the stages at their lines" % (pure, prof.total)


ATTACH_PY = r'''
import os, sys, time
import numpy as np


def attach_spin(path):
    n = 0
    a = np.arange(2000.0)
    while True:
        for i in range(200):
            n += i
        a.sum()  # LINE-ATTACH
        if n % 1990000 == 0:
            with open(path + ".tmp", "w") as f:
                f.write("%d\n" % n)
            os.replace(path + ".tmp", path)


print("ready", flush=True)
attach_spin(sys.argv[1])
'''


def progress(path):
    try:
        with open(path) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return -1


def check_attach():
    script = write_script("attach.py", ATTACH_PY)
    beat = "/tmp/attach.progress"
    p = subprocess.Popen([PY, script, beat], stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline().strip() != "ready":
            return "FAIL", "the Python target did not start"
        time.sleep(1)
        res, prof = record("attach", ["-p", str(p.pid), "-d", "3"], None, timeout=120)
        time.sleep(0.5)
        alive = p.poll() is None
        tracer = E.proc_status(p.pid).get("TracerPid") if alive else "?"
        before = progress(beat)
        time.sleep(2)
        after = progress(beat)
        moving = after > before >= 0
    finally:
        p.kill()
        p.wait()
    spin = prof.count(lambda fr: any(PYFRAME.match(f) and f.startswith("attach_spin (") for f in fr))
    copied, copy_text = E.copies(res, 0.8, 10)
    note("  %s; %s" % (summary(res), copy_text))
    problems = []
    if res.rc != 0:
        problems.append("ember -p exited %s" % res.rc)
    if spin < 0.8 * max(prof.total, 1) or prof.total < 20:
        problems.append("attach_spin in %d of %d samples" % (spin, prof.total))
    if not (alive and tracer == "0" and moving):
        problems.append("after detach: alive %s, TracerPid %s, making progress %s (%s -> %s)" % (
            alive, tracer, moving, before, after))
    if problems:
        show(res, prof)
        return "FAIL", "; ".join(problems)
    return "PASS", "-p -d 3: attach_spin in %d of %d samples; target alive, untraced, running on (%s)" % (
        spin, prof.total, "BPF copier" if copied else copy_text)


def check_diff():
    base = os.path.join(OUT, "chain.ember")
    if not os.path.exists(base):
        return "SKIP", "no chain.ember (the chain check did not run or failed)"
    new = os.path.join(OUT, "chain2.ember")
    res = E.record(["-o", new, "-F", "199"], [E.target("chain"), "1.5"], timeout=300, quiet=True)
    if res.rc != 0:
        show(res)
        return "FAIL", "second chain run: ember exit %s" % res.rc
    csv_path = os.path.join(OUT, "chain.diff.csv")
    res = E.run([E.ember(), "diff", base, new, "-o", csv_path, "-o", os.path.join(OUT, "chain.diff.svg"),
                 "--normalize", "absolute"], timeout=120, quiet=True)
    note(E._indent(res.stdout[:1500]))
    rows = {}
    if os.path.exists(csv_path):
        import csv
        with open(csv_path) as f:
            body = [l for l in f.read().splitlines() if not l.startswith("#")]
        rows = {r["key"]: r for r in csv.DictReader(body)}
    hot = rows.get("hot")
    if res.rc != 0 or not hot:
        show(res)
        return "FAIL", "ember diff exit %s, row for hot: %s (keys %s)" % (res.rc, hot, sorted(rows)[:10])
    note("  hot: %s" % {k: hot[k] for k in ("status", "unit", "incl_base", "incl_new", "incl_delta")})
    # 3 s then 1.5 s of hot: in absolute seconds hot shrank by about 1.5 s.
    try:
        d = float(hot["incl_delta"])
    except (KeyError, ValueError):
        d = None
    number("diff: hot's inclusive delta, seconds (expected about -1.5)", d)
    if d is None or not (-2.4 <= d <= -0.6):
        return "FAIL", "hot's inclusive delta %s, expected about -1.5 s (chain 3 s at 99 Hz vs 1.5 s at 199 Hz)" % d
    return "PASS", "ember diff of chain 3 s vs 1.5 s: hot %+.2f s, rates differing noted" % d


BLAS_PY = r'''
import os, sys, time
import numpy as np


def matmul_stage(a, b, secs):
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        a @ b  # LINE-MATMUL
        n += 1
    return n


def main(secs):
    rng = np.random.default_rng(1)
    a = rng.random((256, 256))
    b = rng.random((256, 256))
    print("matmuls=%d" % matmul_stage(a, b, secs))
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l})
    print("blas=%s" % " ".join(libs))


main(float(sys.argv[1]))
'''


def is_blas(frame):
    return "blas" in frame.lower() or "gemm" in frame.lower()


def check_blas():
    script = write_script("blas.py", BLAS_PY)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    # --native-unfiltered keeps the interpreter's frames: the native stack
    # must run from the kernel through the eval loop up to Py_BytesMain.
    res, prof = record("blas", ["--native-unfiltered", "-o", os.path.join(OUT, "blas.ember")],
                       [PY, script, "5"], env=env)
    if res.rc != 0 or prof.total == 0:
        show(res, prof)
        return "FAIL", "ember exit %s, %d samples" % (res.rc, prof.total)
    note("  %s (%s)" % (summary(res), (re.search(r"^blas=.*$", res.stdout, re.M) or [""])[0]))
    scan = summary_line(res.stderr, r"\d+ samples passed a frame without unwind info[^\n]*")
    note("  %s" % (scan or "the summary reports no frame without unwind info"))
    in_blas = reached = native = 0
    leaves = {}
    for frames, c in prof.stacks:
        leaf = frames[-1]
        if not is_blas(leaf):
            continue
        in_blas += c
        leaves[leaf] = leaves.get(leaf, 0) + c
        if "_PyEval_EvalFrameDefault" in frames and "Py_BytesMain" in frames:
            native += c
            if any(f.startswith("matmul_stage (") for f in frames):
                reached += c
    for leaf, c in sorted(leaves.items(), key=lambda kv: -kv[1])[:5]:
        note("  %6d  leaf %s" % (c, leaf))
    if in_blas < 20:
        show(res, prof)
        return "FAIL", "only %d samples in OpenBLAS" % in_blas
    frac = float(reached) / in_blas
    number("blas: samples in OpenBLAS whose native stack reaches the eval loop and Py_BytesMain",
           "%d of %d (%.1f%%)" % (native, in_blas, 100.0 * native / in_blas))
    number("blas: samples in OpenBLAS whose stack reaches matmul_stage and Py_BytesMain", "%d of %d (%.1f%%)" %
           (reached, in_blas, 100 * frac))
    if frac < 0.9:
        show(res, prof)
        return "FAIL", "only %d of %d OpenBLAS samples reach matmul_stage and Py_BytesMain (%.1f%%, want >= 90%%)" % (
            reached, in_blas, 100 * frac)
    return "PASS", "%d of %d OpenBLAS samples (%.1f%%) reach the Python caller matmul_stage and Py_BytesMain" % (
        reached, in_blas, 100 * frac)


COST_PY = r'''
import sys
import numpy as np


def pure(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def work(rounds):
    a = np.random.default_rng(1).random(100000)
    for _ in range(rounds):
        pure(100000)
        np.sort(a)


work(int(sys.argv[1]))
'''


COST_ROUNDS = 3


def cost_round(script, rounds):
    """One round: the workload alone, under ember, under perf (+ report).
    Returns (per-sample CPU us of ember, perf record, perf record + report,
    and the raw values for the report), or an error string."""
    rc, _, err, alone = timed([PY, script, rounds])
    if rc != 0:
        return "the workload failed: %s" % err[-300:]
    rc, _, err, t_ember = timed([E.ember(), "record", "-F", "99", "-o", os.path.join(OUT, "cost.folded"),
                                 "--", PY, script, rounds])
    s = E.parse_summary(err)
    own = summary_line(err, r"profiler CPU [0-9.]+ us/sample")
    data = "/tmp/cost-perf.data"
    rc2, _, err2, t_perf = timed(["perf", "record", "-F", "99", "-e", "cpu-clock", "--call-graph", "dwarf",
                                  "-o", data, "--", PY, script, rounds])
    m = re.search(r"\((\d+) samples\)", err2)
    rc3, _, err3, t_report = timed(["perf", "report", "-i", data, "--stdio", "--no-inline"], timeout=900)
    if os.path.exists(data):
        os.unlink(data)
    if rc != 0 or not s or rc2 != 0 or not m or rc3 != 0:
        return "ember %s (%s) / perf record %s / perf report %s: %s" % (
            rc, err[-200:], rc2, rc3, (err2 + err3)[-300:])
    n_ember, n_perf = s["samples"], int(m.group(1))
    costs = ((t_ember - alone) / n_ember * 1e6, (t_perf - alone) / n_perf * 1e6,
             (t_perf + t_report - alone) / n_perf * 1e6)
    note("  round: alone %.2f s; ember %.2f s, %d samples (%s); perf record %.2f s, %d samples; "
         "perf report %.2f s -> us/sample %.0f / %.0f / %.0f" %
         ((alone, t_ember, n_ember, own, t_perf, n_perf, t_report) + costs))
    return costs


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def check_cost():
    script = write_script("cost.py", COST_PY)
    got = []
    for _ in range(COST_ROUNDS):
        r = cost_round(script, "12")
        if isinstance(r, str):
            return "FAIL", r
        got.append(r)
    ember, perf, perf_all = (median([g[i] for g in got]) for i in range(3))
    number("cost: CPU us per sample, medians of %d rounds: ember record / perf record / perf record + report"
           % COST_ROUNDS, "%.0f / %.0f / %.0f" % (ember, perf, perf_all))
    number("cost: ratio ember / perf record", "%.2f" % (ember / perf))
    number("cost: ratio ember / (perf record + perf report)", "%.2f" % (ember / perf_all))
    return "PASS", "per sample: ember %.0f us, perf record %.0f us (+report %.0f us); ratios %.2f / %.2f" % (
        ember, perf, perf_all, ember / perf, ember / perf_all)


def task_state(pid, tid):
    """A thread's state letter (R, S, t, T...) from its stat file."""
    try:
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            return f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "?"


DUMP_PY = r'''
import sys, threading, time


def napper():
    label = "sleepy"
    time.sleep(600)


def spinner():
    count = 42
    n = 0
    while True:
        n += 1


threading.Thread(target=napper, name="napper", daemon=True).start()
print("ready", flush=True)
spinner()
'''


def check_dump():
    script = write_script("dump_target.py", DUMP_PY)
    p = subprocess.Popen([PY, script], stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline().strip() != "ready":
            return "FAIL", "the Python target did not start"
        time.sleep(1)
        res = E.run([E.ember(), "dump", "-p", str(p.pid), "--locals"], timeout=120, quiet=True)
        with open(os.path.join(OUT, "dump.txt"), "w") as f:
            f.write(res.describe())
        time.sleep(0.3)
        states = [task_state(p.pid, t) for t in os.listdir("/proc/%d/task" % p.pid)]
        tracer = E.proc_status(p.pid).get("TracerPid")
    finally:
        p.kill()
        p.wait()
    out = res.stdout
    problems = []
    if res.rc != 0:
        problems.append("ember dump exited %s" % res.rc)
    if not re.search(r"spinner \(.*dump_target\.py:\d+\)", out) or "count = 42" not in out:
        problems.append("the main thread's spinner (with count = 42) not shown")
    if not re.search(r"napper \(.*dump_target\.py:\d+\)", out) or "label = 'sleepy'" not in out:
        problems.append("the sleeping thread's napper (with label = 'sleepy') not shown")
    if "clock_nanosleep" not in out and "select" not in out:
        problems.append("no sleeping system call under napper")
    if tracer != "0" or any(st in ("t", "T") for st in states):
        problems.append("target left traced or stopped (TracerPid %s, states %s)" % (tracer, states))
    m = re.search(r"Kept each thread stopped for at most ([\d.]+) ms", out)
    if problems:
        note(res.describe())
        return "FAIL", "; ".join(problems)
    number("dump: longest stop of a thread, ms", m.group(1) if m else "?")
    return "PASS", "spinner and napper at their lines with their locals; target untraced, running (stops %s ms at most)" % (
        m.group(1) if m else "?")


IDLE_PY = r'''
import sys, time


def crunching(s):
    end = time.monotonic() + s
    n = 0
    while time.monotonic() < end:
        n += 1


def napping(s):
    time.sleep(s)


crunching(1.5)
napping(1.5)
'''


def check_idle():
    script = write_script("idle.py", IDLE_PY)
    res, prof = record("idle", ["--idle"], [PY, script], timeout=300)
    if res.rc != 0:
        show(res, prof)
        return "FAIL", "ember record --idle exited %s" % res.rc
    if "not available" in res.stderr or "off CPU" not in res.stderr:
        show(res, prof)
        return "FAIL", "no off-CPU time traced: " + (summary_line(res.stderr, r"--idle.*") or "no --idle line")
    total = prof.total
    nap = prof.count(lambda fr: any(f.startswith("napping (") for f in fr))
    crunch = prof.count(lambda fr: any(f.startswith("crunching (") for f in fr))
    share_n = 100.0 * nap / total if total else 0
    share_c = 100.0 * crunch / total if total else 0
    number("idle: napping / crunching share of the wall time, %", "%.1f / %.1f" % (share_n, share_c))
    # (emulated: the interpreter's start is slow, hence the wide bounds)
    if not (35 <= share_n <= 60 and 30 <= share_c <= 60):
        show(res, prof)
        return "FAIL", "napping %.1f%%, crunching %.1f%% of the wall time (want ~50%% each)" % (share_n, share_c)
    return "PASS", "napping %.1f%%, crunching %.1f%% of the wall time (1.5 s each)" % (share_n, share_c)


# ---------------------------------------------------------------- pools


def stage_shares(prof):
    counts, total = {}, 0
    for frames, c in prof.stacks:
        stage = None
        for f in frames:
            m = re.match(r"(stage_\w+)( \(|$)", f)
            if m:
                stage = m.group(1)
        if stage:
            counts[stage] = counts.get(stage, 0) + c
            total += c
    return {k: 100.0 * v / (total or 1) for k, v in counts.items()}


def check_pools():
    """Pool threads' samples under the stack that dispatched their work
    (docs/pools.md): NumPy on OpenBLAS's ARMv8 pool and an OpenMP program,
    two threads each, stage shares against each program's own CPU truth."""
    problems, done = [], []
    # the x86 test's workload (tests/python/pool_stages.py), its NumPy and
    # pure-Python stages: it prints each stage's CPU, all threads, as truth
    script = os.path.join(SHARE, "pool_stages.py")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    res, prof = record("pools-py", ["--threads"], [PY, script, "8", "blas", "python"], env=env)
    m = re.search(r"^TRUTH (.*)$", res.stdout, re.M)
    spent = json.loads(m.group(1)) if m else {}
    stages = {k: v for k, v in spent.items() if k.startswith("stage_")}
    truth = {k: 100.0 * v / (sum(stages.values()) or 1.0) for k, v in stages.items()}
    got = stage_shares(prof)
    main_roots = {f[0] for f, _ in prof.stacks if f[0].startswith("MainThread")}
    worker = sum(c for f, c in prof.stacks if f[0] not in main_roots)
    placed = sum(c for f, c in prof.stacks if f[0] not in main_roots and any(x.startswith("stage_") for x in f))
    def rounded(shares):
        return {k: round(v, 1) for k, v in shares.items()}
    note("  %s; truth %s; measured %s; worker samples under a stage %d of %d" % (
        summary(res), rounded(truth), rounded(got), placed, worker))
    if res.rc != 0 or not truth:
        show(res, prof)
        problems.append("pool_stages.py: ember exit %s" % res.rc)
    for k, v in truth.items():
        if abs(got.get(k, 0.0) - v) > 7.0:
            problems.append("pool_stages.py: %s %.1f%% of the samples, %.1f%% of the CPU" % (k, got.get(k, 0.0), v))
    if worker < 20 or placed < 0.8 * worker:
        problems.append("pool_stages.py: only %d of OpenBLAS's threads' %d samples under a stage" % (placed, worker))
    done.append("OpenBLAS: %d of %d worker samples under a stage" % (placed, worker))
    omp = E.target("omp_stages")
    if os.path.exists(omp):
        res, prof = record("pools-omp", [], [omp, "4"],
                           env=dict(os.environ, OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive"))
        t = {m.group(1): float(m.group(2)) for m in re.finditer(r"^stage (\w+) ([\d.]+)$", res.stdout, re.M)}
        tot = sum(t.values()) or 1.0
        got = stage_shares(prof)
        note("  omp_stages: %s; truth %s; measured %s" % (
            summary(res), {k: round(100 * v / tot, 1) for k, v in t.items()},
            {k: round(v, 1) for k, v in got.items()}))
        for k, v in t.items():
            if abs(got.get(k, 0.0) - 100 * v / tot) > 7.0:
                problems.append("omp_stages: %s %.1f%% of the samples, %.1f%% of the CPU" %
                                (k, got.get(k, 0.0), 100 * v / tot))
        done.append("OpenMP: stages within 7 points")
    else:
        problems.append("omp_stages is not among the targets")
    if problems:
        return "FAIL", "; ".join(problems)
    return "PASS", "; ".join(done)


# ---------------------------------------------------------------- package

def check_package():
    debs = sorted(f for f in os.listdir(SHARE) if f.startswith("ember_") and f.endswith("_arm64.deb"))
    if not debs:
        return "SKIP", "no ember_*_arm64.deb in the share (run.sh --deb; make test-arm64-vm passes one)"
    deb = os.path.join(SHARE, debs[0])
    rc, out, err = sh(["dpkg", "-i", deb], timeout=120)
    if rc != 0:
        note(out + err)
        return "FAIL", "dpkg -i %s: exit %d: %s" % (debs[0], rc, (err.strip().splitlines() or ["?"])[-1])
    try:
        problems = []
        rc, listing, _ = sh(["dpkg", "-L", "ember"])
        files = {l for l in listing.split() if os.path.isfile(l)}
        want = {"/usr/bin/ember", "/usr/share/bash-completion/completions/ember"}
        if not want <= files:
            problems.append("dpkg -L lacks %s" % sorted(want - files))
        # The guest's dpkg leaves out /usr/share/man (build-image.sh's
        # path-exclude): the man pages are looked for in the package itself.
        rc, contents, _ = sh(["dpkg-deb", "-c", deb])
        if "./usr/share/man/man1/ember-record.1.gz" not in contents:
            problems.append("the package holds no ember-record.1.gz")
        rc, out, _ = sh(["/usr/bin/ember", "--version"])
        lines = out.splitlines()
        if rc != 0 or not lines or not lines[0].startswith("ember ") or "aarch64" not in out:
            problems.append("ember --version: exit %d, %r" % (rc, lines[:2]))
        folded = os.path.join(OUT, "package-chain.folded")
        res = E.run(["/usr/bin/ember", "record", "-o", folded, "--", E.target("chain"), "2"],
                    timeout=300, quiet=True)
        prof = E.parse_folded(folded) if os.path.exists(folded) else E.Profile([], ["no output"], "")
        good = prof.count(chain_leaf_ok)
        if res.rc != 0 or prof.total == 0 or good < 0.9 * prof.total:
            show(res, prof)
            problems.append("installed ember on chain: exit %s, main;a;b;hot in %d of %d samples"
                            % (res.rc, good, prof.total))
        sh(["dpkg", "-r", "ember"], timeout=120)
        if os.path.exists("/usr/bin/ember"):
            problems.append("dpkg -r left /usr/bin/ember")
        if problems:
            return "FAIL", "; ".join(problems)
        return "PASS", "%s installed by dpkg (%d files), main;a;b;hot in %d of %d samples, removed" % (
            debs[0], len(files), good, prof.total)
    finally:
        if os.path.exists("/usr/bin/ember"):
            sh(["dpkg", "-r", "ember"], timeout=120)


# ---------------------------------------------------------------- main

CHECKS = [("env", check_env), ("perf", check_perf), ("bpf", check_bpf),
          ("chain", check_chain), ("numpy_cv", check_numpy_cv), ("python_only", check_python_only),
          ("attach", check_attach), ("diff", check_diff), ("blas", check_blas), ("cost", check_cost),
          ("dump", check_dump), ("idle", check_idle), ("pools", check_pools), ("package", check_package)]
NEEDS_EMBER = {"chain", "numpy_cv", "python_only", "attach", "diff", "blas", "cost", "dump", "idle",
               "pools", "package"}


def ember_runs():
    rc, out, err = sh([E.ember(), "--help"], timeout=60)
    return rc == 0, (out + err).strip().splitlines()[:1]


def main():
    E.args()
    os.makedirs(OUT, exist_ok=True)
    only = set(open(os.path.join(SHARE, "only")).read().split(",")) - {"", "\n"} if os.path.exists(
        os.path.join(SHARE, "only")) else set()
    only = {o.strip() for o in only if o.strip()}
    ok_ember, why = ember_runs()
    t_all = time.monotonic()
    for name, fn in CHECKS:
        if only and name not in only:
            continue
        note("\n== %s ==" % name)
        t0 = time.monotonic()
        if name in NEEDS_EMBER and not ok_ember:
            status, detail = "FAIL", "ember does not run in the guest: %s" % why
        else:
            try:
                status, detail = fn()
            except Exception:  # a crashed check is a failed check, the others still run
                status, detail = "FAIL", "exception: " + traceback.format_exc().strip().splitlines()[-1]
                note(traceback.format_exc())
        took = time.monotonic() - t0
        RESULTS.append((name, status, detail, took))
        note("%s: %s (%.0f s): %s" % (status, name, took, detail))
    note("\n==== arm64 VM summary (%.0f s of checks) ====" % (time.monotonic() - t_all))
    for name, status, detail, took in RESULTS:
        note("%-5s %-12s %5.0f s  %s" % (status, name, took, detail))
    if NUMBERS:
        note("numbers:")
        for k, v in NUMBERS:
            note("  %s: %s" % (k, v))
    counts = {s: sum(1 for r in RESULTS if r[1] == s) for s in ("PASS", "FAIL", "SKIP", "INFO")}
    note("%d passed, %d failed, %d skipped" % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    sys.exit(1 if counts["FAIL"] else 0)


main()
