#!/usr/bin/env python3
"""Python merging: attribution accuracy, mismatch rate, cost of a Python stack
read, and target slowdown with merging on.  Standard library only.

usage: python_bench.py BUILD_DIR [--seconds S] [--rounds N] [--only PART,...]
PART: accuracy, read, mismatch, reader, drain, stolen, slowdown (default: all)

- accuracy (with and without --no-copier): tests/python/native_calls.py (four Python functions, each calling
  its own native hot function: cv::GaussianBlur, cv::Canny, BLAS dgemm, zlib
  deflate) at -F 999; share of those native samples whose nearest Python frame
  is the right caller, and the mismatch rate ember reports;
- mismatch with the frames copied by the kernel at the sample (BPF, the
  default) and read after it (--no-copier), and with and without the eval
  loop's DWARF (after the sample): raise_gen.py and zlib_pair.py on every
  interpreter, 2 s each, interleaved;
- read cost: a 20-deep Python recursion burning at the bottom, -F 999 and
  99, against a 1-deep one in the same invocation (what any read costs); the
  mean and median time of a Python stack read from ember's summary; each
  also with both vCPUs kept busy by idle-priority spinners (ember's CPU then
  never idles between samples: the read without the caches' cold start);
  at -F 99 also woken at every sample (EMBER_TEST_PY_DRAIN_MS=0);
- reader: bench/py_read_bench.c on every interpreter, against a floor read
  (one minimal process_vm_readv) in the same run;
- drain: ember drains its rings on a timer and when the copier wakes it
  (code objects and threads it has not seen), against a wakeup at every
  sample (EMBER_TEST_PY_DRAIN_MS=0), interleaved: native_calls.py at -F 99
  and 999 (uncertain share, read cost, ember's CPU, copier cost, wakes);
  and the mismatch rate of both on every interpreter (raise_gen.py,
  zlib_pair.py);
- time taken from the target per sample: bench/targets/stolen_time.py
  (a 21-frame CPU-bound loop reading the clock back to back) logs every
  step it did not run its own code; the gaps that hold one of ember's
  sample times (from the .ember timeline) are what each sample cost the
  target, with the slower iterations after it (caches refilled); -F 99 and
  999, with and without the BPF copier, -F 99 also woken at every sample,
  against a run with no profiler and
  one of `perf record -F 99 --call-graph dwarf` (when perf is installed);
- slowdown: bench/targets/loop_rate.py prints its loop rate every 0.1 s;
  ember (-F 99, merging on) attaches to it for every other window of a few
  seconds: the rate with ember attached against the windows without, in the
  same process (the spread between separate runs of the same program is
  12-39 % on this VM and would hide a 0.5 % effect).
"""
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

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
level(int(sys.argv[2]) if len(sys.argv) > 2 else 20, time.time() + float(sys.argv[1]))
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
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 20
    ember = os.path.join(build, "ember")
    tmp = tempfile.mkdtemp(prefix="ember-pybench-")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")

    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None

    def want(part):
        return only is None or part in only

    if want("accuracy"):
        for flags, label in (([], "frames copied at the sample (BPF)"), (["--no-copier"], "frames read after the sample")):
            accuracy(ember, tmp, seconds, env, flags, label)

    if want("read"):
        read_cost(ember, tmp, seconds)
    if want("mismatch"):
        mismatch_ab(ember, tmp, "frames copied at the sample (BPF) / read after it",
                    [("at sample", [], {"EMBER_BPF_STATS": "1"}), ("read after", ["--no-copier"], {})])
        mismatch_ab(ember, tmp, "read after the sample (--no-copier), with / without the eval loop's DWARF",
                    [("DWARF", ["--no-copier"], {}), ("learnt only", ["--no-copier"], {"EMBER_TEST_PY_NO_DWARF": "1"})])
    if want("reader"):
        reader_cost(build, tmp)
    if want("drain"):
        drain_ab(ember, tmp, env)
        mismatch_ab(ember, tmp, "drained on a timer (the copier wakes ember for new code objects and threads) / "
                    "at every sample", [("timer", [], {}), ("per sample", [], {"EMBER_TEST_PY_DRAIN_MS": "0"})])
    if want("stolen"):
        stolen_time(ember, tmp, seconds)
    if want("slowdown"):
        slowdown_attached(ember, tmp, rounds)


def read_cost(ember, tmp, seconds, rounds=3):
    print("== Python stack read cost (%.0f s, %d interleaved runs each; read mean/median us, ember's capture CPU "
          "us/sample, BPF copier us/run in the target)" % (seconds, rounds))
    deep = os.path.join(tmp, "deep.py")
    with open(deep, "w") as f:
        f.write(DEEP)
    # the last: woken at every sample instead of draining on a timer
    configs = [(999, False, []), (999, False, ["--no-copier"]), (999, True, []), (999, True, ["--no-copier"]),
               (99, False, []), (99, True, []), (99, False, ["per-sample"])]
    for freq, busy, flags in configs:
        wake = {"EMBER_TEST_PY_DRAIN_MS": "0"} if "per-sample" in flags else {}
        ember_flags = [f for f in flags if f != "per-sample"]
        spinners = [subprocess.Popen(["nice", "-n", "19", PY, "-c", "while True: pass"]) for _ in range(2)] \
            if busy else []
        try:
            got = {}
            for _ in range(rounds):
                for depth in (20, 1):
                    err = record(ember, ["-F", str(freq), "-o", os.path.join(tmp, "deep.folded")] + ember_flags,
                                 [PY, deep, str(seconds), str(depth)], dict(os.environ, EMBER_BPF_STATS="1", **wake))
                    m = re.search(r"read ([\d.]+) us/sample \(median ([\d.]+) us\)", err)
                    cap = re.search(r"profiler CPU ([\d.]+) us/sample", err)
                    bpf = re.search(r"BPF frame copier: (\d+) runs in the target, ([\d.]+) us each", err)
                    # the Python frames of the heaviest stack (start-up's imports run deeper)
                    heavy = max(folded(os.path.join(tmp, "deep.folded")), key=lambda sc: sc[1],
                                default=([], 0))[0]
                    frames = len([x for x in heavy if PYFRAME.match(x)])
                    got.setdefault(frames, []).append("%s/%s (%s, %s)" % (
                        m.group(1) if m else "?", m.group(2) if m else "?", cap.group(1) if cap else "?",
                        bpf.group(2) if bpf else "-"))
            for frames in sorted(got, reverse=True):
                print("-F %-4d %-12s %-9s %2d frames: %s" % (
                    freq, "busy vCPUs" if busy else "idle", " ".join(flags) or "default", frames,
                    "; ".join(got[frames])))
        finally:
            for p in spinners:
                p.kill()
                p.wait()


def drain_ab(ember, tmp, env, seconds=3, rounds=4):
    """native_calls.py (start-up imports OpenCV, NumPy: many short-lived
    code objects) with ember draining on a timer (the default; the copier
    wakes it for records it must read at once) and woken at every sample
    (EMBER_TEST_PY_DRAIN_MS=0), interleaved."""
    print("== drained on a timer / woken at every sample (native_calls.py, %d s, %d interleaved runs each): "
          "uncertain %%, read mean/median us, ember's capture CPU us/sample, BPF copier us/run, records that "
          "woke ember" % (seconds, rounds))
    modes = [("timer", {}), ("per sample", {"EMBER_TEST_PY_DRAIN_MS": "0"})]
    for freq in (99, 999):
        got = {name: [] for name, _ in modes}
        for _ in range(rounds):
            for name, extra in modes:
                err = record(ember, ["-F", str(freq), "-o", os.path.join(tmp, "drain.folded")],
                             [PY, os.path.join(ROOT, "tests/python/native_calls.py"), str(seconds)],
                             dict(env, EMBER_BPF_STATS="1", **extra))
                unc = re.search(r"\(([\d.]+)%\) disagreed", err)
                rd = re.search(r"read ([\d.]+) us/sample \(median ([\d.]+) us\)", err)
                cap = re.search(r"profiler CPU ([\d.]+) us/sample", err)
                bpf = re.search(r"runs in the target, ([\d.]+) us each; records: (\d+) woke", err)
                n = re.search(r"(\d+) samples, \d+ lost", err)
                got[name].append("%s%% %s/%s %s %s %s/%s" % (
                    unc.group(1) if unc else "?", rd.group(1) if rd else "?", rd.group(2) if rd else "?",
                    cap.group(1) if cap else "?", bpf.group(1) if bpf else "?", bpf.group(2) if bpf else "?",
                    n.group(1) if n else "?"))
        for name, _ in modes:
            print("-F %-4d %-10s %s" % (freq, name, "; ".join(got[name])))


def uvarint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def ember_sample_times(path):
    """CLOCK_MONOTONIC ns of every sample, from a .ember file's timeline
    (docs/ember-format.md)."""
    import gzip
    b = gzip.open(path).read()
    if b[:8] != b"EMBRPROF":
        sys.exit("%s: not an .ember file" % path)
    _, i = uvarint(b, 8)
    while i < len(b):
        tag = b[i:i + 1]
        n, i = uvarint(b, i + 1)
        if tag == b"L":
            count, j = uvarint(b, i)
            t, times = 0, []
            for _ in range(count):
                z, j = uvarint(b, j)
                t += (z >> 1) ^ -(z & 1)
                _, j = uvarint(b, j)
                _, j = uvarint(b, j)
                times.append(t)
            return times
        i += n
    return []


def stolen_time(ember, tmp, seconds, rounds=3):
    import bisect
    target = os.path.join(HERE, "targets", "stolen_time.py")
    print("== time taken from a CPU-bound Python thread (21 frames), %.0f s runs, %d rounds: gaps in its own "
          "clock readings that hold a sample's time" % (seconds, rounds))
    runs = [("no profiler", None), ("ember -F 99", ["-F", "99"]),
            ("ember -F 99 --stack-size 32768", ["-F", "99", "--stack-size", "32768"]),
            ("ember -F 99 per sample", ["-F", "99"]),
            ("ember -F 99 --no-copier", ["-F", "99", "--no-copier"]), ("ember -F 999", ["-F", "999"])]
    # The anchor: perf's own DWARF sampling (no Python frames), its sample
    # times in CLOCK_MONOTONIC too.
    have_perf = subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode == 0
    if have_perf:
        runs.insert(2, ("perf -F 99 dwarf", "perf"))
    for label, args in [r for _ in range(rounds) for r in runs]:
        gaps_path = os.path.join(tmp, "gaps.txt")
        prof = os.path.join(tmp, "stolen.ember")
        cmd = [PY, target, str(seconds), "20", gaps_path]
        times = []
        if args is None:
            subprocess.run(cmd, check=True)
        elif args == "perf":
            data = os.path.join(tmp, "perf.data")
            subprocess.run(["perf", "record", "-q", "-F", "99", "-k", "CLOCK_MONOTONIC", "--call-graph", "dwarf",
                            "-o", data, "--"] + cmd, check=True, capture_output=True)
            out = subprocess.run(["perf", "script", "-i", data, "-F", "time", "--ns"], capture_output=True,
                                 text=True).stdout
            times = [int(round(float(x.strip().rstrip(":")) * 1e9)) for x in out.split() if x.strip(": ")]
        else:
            # "per sample": woken at every sample, as before the timer drain
            wake = {"EMBER_TEST_PY_DRAIN_MS": "0"} if "per sample" in label else {}
            record(ember, args + ["-o", prof], cmd, dict(os.environ, **wake))
            times = ember_sample_times(prof)
        with open(gaps_path) as f:
            iter_ns, refill_iters = f.readline().split()
            iter_ns, refill_iters = float(iter_ns), int(refill_iters)
            gaps = [tuple(map(int, line.split())) for line in f if line.strip()]
        starts = [g[0] for g in gaps]
        hit = set()
        nsamples = 0
        if args is not None:
            for t in times:
                if not starts or t < starts[0] or t > gaps[-1][0] + gaps[-1][1] + 10 ** 6:
                    continue   # before or after the loop (start-up, exit)
                nsamples += 1
                k = bisect.bisect_right(starts, t) - 1
                if k >= 0 and gaps[k][0] <= t <= gaps[k][0] + gaps[k][1]:
                    hit.add(k)

        def stats(idx):
            lens = [gaps[k][1] - iter_ns for k in idx]
            refill = [gaps[k][2] - refill_iters * iter_ns for k in idx if gaps[k][2] >= 0]
            if not lens:
                return 0, 0, 0, 0
            return statistics.median(lens) / 1e3, statistics.mean(lens) / 1e3, \
                (statistics.mean(refill) / 1e3 if refill else 0), sum(lens) / 1e9
        other = [k for k in range(len(gaps)) if k not in hit]
        o_med, _, _, o_sum = stats(other)
        line = "%-22s iteration %.0f ns; other gaps %.0f/s, median %.1f us, %.2f%% of the time" % (
            label, iter_ns, len(other) / seconds, o_med, 100 * o_sum / seconds)
        if args is not None:
            med, mean, refill, total = stats(sorted(hit))
            line += ("; samples %d, %d (%.1f%%) in a gap: per sample median %.1f us, mean %.1f us, then %+.1f us "
                     "over the next %d iterations -> %.3f%% of the target's time" % (
                         nsamples, len(hit), 100 * len(hit) / max(nsamples, 1), med, mean, refill, refill_iters,
                         100 * (total + refill * len(hit) / 1e6) / seconds))
        print(line)


def accuracy(ember, tmp, seconds, env, flags, label):
    """native_calls.py: share of samples in a known native hot function whose
    nearest Python frame is its caller, and the mismatch rate."""
    print("== attribution accuracy (native_calls.py, -F 999, %.0f s), %s" % (seconds, label))
    out = os.path.join(tmp, "acc.folded")
    err = record(ember, ["-F", "999", "-o", out] + flags,
                 [PY, os.path.join(ROOT, "tests/python/native_calls.py"), str(seconds)], env)
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
    rd = re.search(r"read ([\d.]+) us/sample \(median ([\d.]+) us\), starting ([\d.]+) us after the sample "
                   r"\((\d+) reads over 1 ms late\); (\d+) samples \(([\d.]+)%\) checked .*, (\d+) corrected", err)
    at = re.search(r"at the sample \(BPF\) for (\d+) of (\d+) reads \(([\d.]+)%\)", err)
    print("samples with a known native hot function: %d; under the right Python caller: %d (%.2f%%)"
          % (total, good, 100.0 * good / max(total, 1)))
    if m:
        print("mismatch rate reported: %s of %s samples (%s%%)" % (m.group(1), m.group(2), m.group(3)))
    if at:
        print("frames copied at the sample for %s of %s reads (%s%%)" % at.groups())
    if rd:
        print("Python read %s us/sample (median %s us), started %s us after the sample on average (%s over 1 ms); "
              "%s%% of samples checked against the sample, %s corrected"
              % (rd.group(1), rd.group(2), rd.group(3), rd.group(4), rd.group(6), rd.group(7)))


def mismatch_ab(ember, tmp, title, modes, reps=2):
    """Uncertain share under each mode (name, ember flags, extra environment),
    interleaved, on every interpreter: raise_gen.py (the stack changes every
    microsecond) and zlib_pair.py (2 s: start-up imports are most of the
    uncertain); with the BPF copier's own time in the target when a mode
    asks the kernel to time it (EMBER_BPF_STATS)."""
    print("== mismatch rate, %s (-F 999, 2 s, %d interleaved runs each)" % (title, reps))
    pat = re.compile(r"(\d+) of (\d+) samples \(([\d.]+)%\) disagreed")
    cost = re.compile(r"BPF frame copier: (\d+) runs in the target, ([\d.]+) us each")
    for script in ("raise_gen.py", "zlib_pair.py"):
        for label, exe in interpreters() + [("debug /usr/bin/python3.11d", "/usr/bin/python3.11d")]:
            if not os.path.exists(exe):
                continue
            got = {name: [] for name, _, _ in modes}
            us = []
            for _ in range(reps):
                for name, flags, extra in modes:
                    err = record(ember, ["-F", "999", "-o", os.path.join(tmp, "mm.folded")] + flags,
                                 [exe, os.path.join(ROOT, "tests/python", script), "2"], dict(os.environ, **extra))
                    m = pat.search(err)
                    got[name].append(m.group(3) + "%" if m else "?")
                    c = cost.search(err)
                    if c:
                        us.append(c.group(2))
            print("%-14s %-32s %s%s" % (script, label,
                                        "  ".join("%s %-16s" % (n, " / ".join(got[n])) for n, _, _ in modes),
                                        "  BPF us/sample " + " / ".join(us) if us else ""))


def interpreters():
    """(label, path): Debian's python3 and every pyenv version."""
    out = [("system " + PY, PY)]
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    except OSError:
        root = os.path.expanduser("~/.pyenv")
    vdir = os.path.join(root, "versions")
    for v in sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []:
        exe = os.path.join(vdir, v, "bin", "python")
        if os.path.exists(exe):
            out.append((v, exe))
    return out


def reader_cost(build, tmp):
    """bench/py_read_bench.c on a 21-frame stack of every interpreter: back to
    back (warm caches) and 1 ms apart (as sampling reads are)."""
    bench = os.path.join(build, "ember_py_read_bench")
    print("== Python stack read alone (bench/py_read_bench.c; 21 frames; floor = one 64-byte process_vm_readv)")
    deep = os.path.join(tmp, "deep_forever.py")
    with open(deep, "w") as f:
        f.write(DEEP)
    for label, exe in interpreters():
        tgt = subprocess.Popen([exe, deep, "120"])
        try:
            time.sleep(0.8)
            for mode, args in (("back to back", ["3000", "0"]), ("1 ms apart", ["1000", "1000"])):
                r = subprocess.run([bench, str(tgt.pid)] + args, capture_output=True, text=True)
                print("%-22s %-12s %s" % (label, mode, (r.stdout or r.stderr).strip()))
        finally:
            tgt.kill()
            tgt.wait()


def slowdown_attached(ember, tmp, rounds, window=3.0, freq=99):
    """The loop's rate while ember (-F freq, merging on) is attached vs while
    it is not: one target process, alternating windows."""
    print("== slowdown of a CPU-bound Python loop, merging on, -F %d (%d attached/detached window pairs of %.0f s)"
          % (freq, rounds, window))
    target = os.path.join(HERE, "targets", "loop_rate.py")
    tgt = subprocess.Popen([PY, target, str(rounds * (2 * window + 3) + 4)], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    windows = []   # (round, attached, t0, t1) in CLOCK_MONOTONIC, which the target prints too
    for r in range(rounds):
        t0 = time.monotonic()
        time.sleep(window)
        windows.append((r, False, t0 + 0.3, time.monotonic() - 0.1))
        t0 = time.monotonic()
        subprocess.run([ember, "record", "-q", "-F", str(freq), "-p", str(tgt.pid), "-d", str(window),
                        "-o", os.path.join(tmp, "attached.folded")], check=True)
        # sampling starts within ~0.5 s of the launch and ends >= window after it
        windows.append((r, True, t0 + 1.0, t0 + window))
        time.sleep(0.5)
    tgt.terminate()
    out, _ = tgt.communicate()
    slices = [tuple(map(float, line.split())) for line in out.splitlines() if line.strip()]

    def rate(t0, t1):   # median: a slice where another process took the CPU is an outlier
        v = [x for t, x in slices if t0 <= t <= t1]
        return statistics.median(v) if v else float("nan")
    ratios = []
    for r in range(rounds):
        off = [rate(a, b) for rr, on, a, b in windows if rr == r and not on][0]
        on = [rate(a, b) for rr, on, a, b in windows if rr == r and on][0]
        ratios.append(100 * (off / on - 1))
    def iqr(t0, t1):
        v = sorted(x for t, x in slices if t0 <= t <= t1)
        return 100 * (v[3 * len(v) // 4] / v[len(v) // 4] - 1)
    noise = [iqr(a, b) for rr, on, a, b in windows if not on]
    print("slowdown per window pair (rate detached / attached - 1): %s" % " ".join("%+.2f%%" % x for x in ratios))
    print("median of pairs %+.2f%%; slice-to-slice spread within a detached window: median %.2f%% (interquartile)"
          % (statistics.median(ratios), statistics.median(noise)))
    # Pooled: the median slice rate over all detached windows against all
    # attached ones, with a bootstrap 95 % interval (slices resampled).
    pools = {on: [x for t, x in slices for rr, o, a, b in windows if o == on and a <= t <= b] for on in (False, True)}
    rng = random.Random(1)

    def pooled(off, on):
        return 100 * (statistics.median(off) / statistics.median(on) - 1)
    boot = sorted(pooled(rng.choices(pools[False], k=len(pools[False])), rng.choices(pools[True], k=len(pools[True])))
                  for _ in range(400))
    print("pooled over %d detached / %d attached slices: %+.2f%% (95%% interval %+.2f%% .. %+.2f%%)"
          % (len(pools[False]), len(pools[True]), pooled(pools[False], pools[True]), boot[10], boot[389]))

if __name__ == "__main__":
    main()
