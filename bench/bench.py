#!/usr/bin/python3
"""ember benchmarks: target slowdown and profiler CPU per sample, against perf.

    python3 bench/bench.py BUILD_DIR [--rounds 7] [--ps-rounds 3] ...

Python 3 standard library only.  Prints markdown tables (and a verdict per
goal) on stdout; progress goes to stderr.  This is a benchmark: it never fails
on a number, only when ember itself misbehaves (crash, bad exit status, no
summary line), and then it says exactly what it saw.

Method
  slowdown  Each round runs, in a shuffled order, the unprofiled target and
            the target under ember -F 99 / -F 999 and perf --call-graph dwarf
            -F 99 / -F 999, for a C loop, a Python loop, the C loop on two
            threads (spin2) and NumPy + OpenCV work (np_work.py: its wall
            time, as its pools spin while they wait; --no-pools leaves these
            two out).  The target measures the CPU time of its own work
            (CLOCK_PROCESS_CPUTIME_ID / time.process_time()), so the number
            excludes start-up and the profiler's own CPU and includes what
            sampling costs inside the target (interrupt, register and stack
            copy, cache pollution).  On a shared, noisy VM only ratios taken
            from interleaved runs mean anything: min/min and median/median.
  per sample  ember -F 999 on a ~5 s run of a 13-frame Python stack and of a
            ~46-frame C stack; ember's CPU from its own summary (capture CPU
            + symbolization time) and, externally, wait4() rusage of the ember
            process tree minus the target's own getrusage total, and the
            zombie's /proc/PID/schedstat.  perf: perf record (same external
            method) + perf script (its rusage; perf unwinds there).
  --ref EMBER  Another ember binary (a build of an earlier revision) runs in
            the same rounds as "ref 99" / "ref 999" and next to each
            per-sample run; the report adds this tree's ratio to it.  This is
            how a change is shown not to move the numbers.
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
TARGETS = os.path.join(HERE, "targets")

SUMMARY_RE = re.compile(
    r"ember: (\d+) samples, (\d+) lost, (\d+) truncated, (\d+) unwind failures; "
    r"profiler CPU ([\d.]+) us/sample while sampling \(unwinding ([\d.]+) us elapsed\), "
    r"symbolization ([\d.]+) ms CPU")
TARGET_CPU_RE = re.compile(r"target CPU ([\d.]+) s user, ([\d.]+) s sys")
TARGET_OUT_RE = re.compile(r"cpu ([\d.]+) total ([\d.]+)")


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------
# running one process and measuring it from outside

def run_measured(argv, env=None, stdout_path=None):
    """Run argv; return (rc, stdout, stderr, tree_cpu_s, self_cpu_s, wall_s).

    tree_cpu_s: wait4() rusage (user+sys) of the process and every descendant
    it reaped (for ember/perf record: the target too).  self_cpu_s: the
    process's own runtime from /proc/PID/schedstat read while it is a zombie
    (exact for a single-threaded process; None when unavailable)."""
    out_f = open(stdout_path, "wb") if stdout_path else subprocess.PIPE
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=out_f, stderr=subprocess.PIPE, env=env)
    # The outputs of our commands are small except perf script's, which goes
    # to a file, so the pipes cannot fill up while we wait without reaping.
    self_cpu = None
    try:
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        with open("/proc/%d/schedstat" % p.pid) as f:
            self_cpu = int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, AttributeError, IndexError):
        self_cpu = None
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    out = b"" if stdout_path else p.stdout.read()
    err = p.stderr.read()
    if stdout_path:
        out_f.close()
    else:
        p.stdout.close()
    p.stderr.close()
    tree = ru.ru_utime + ru.ru_stime
    return (p.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
            tree, self_cpu, wall)


def parse_target(out, what):
    m = TARGET_OUT_RE.search(out)
    if not m:
        raise BenchError("%s: the target printed no 'cpu ... total ...' line; stdout was:\n%s"
                         % (what, out[-2000:]))
    return float(m.group(1)), float(m.group(2))


def parse_ember(err, what):
    m = SUMMARY_RE.search(err)
    if not m:
        raise BenchError("%s: no sample summary line on ember's stderr; stderr was:\n%s"
                         % (what, err[-3000:]))
    d = {
        "samples": int(m.group(1)), "lost": int(m.group(2)),
        "truncated": int(m.group(3)), "unwind_failures": int(m.group(4)),
        "capture_us": float(m.group(5)), "unwind_us": float(m.group(6)),
        "symbolize_ms": float(m.group(7)),
    }
    t = TARGET_CPU_RE.search(err)
    d["target_cpu_ember"] = float(t.group(1)) + float(t.group(2)) if t else None
    return d


def folded_stats(path):
    """(samples, frames per sample) of a folded-stacks file."""
    samples = frames = 0
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            samples += n
            frames += n * (stack.count(";") + 1)
    return samples, (frames / samples if samples else 0.0)


def perf_script_stats(path):
    """(samples, frames per sample) of default `perf script` output."""
    samples = frames = 0
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            if line[0] in " \t":
                frames += 1
            else:
                samples += 1
    return samples, (frames / samples if samples else 0.0)


# --------------------------------------------------------------------------
# the bench

class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="ember-bench-")
        self.ember = self.find_ember(args.build_dir)
        self.ref = self.find_ember(args.ref) if args.ref else None
        self.perf = None if args.no_perf else self.check_perf()
        self.python = self.check_python()
        self.numpy_python = self.check_numpy()
        self.build_targets()

    # ---- environment
    def find_ember(self, build):
        path = build if os.path.isfile(build) else os.path.join(build, "ember")
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            log("bench: no ember binary at %s (run 'make build' first)" % path)
            sys.exit(2)
        return os.path.abspath(path)

    def check_perf(self):
        perf = shutil.which("perf")
        if not perf:
            log("bench: WARNING: 'perf' not found: SKIPPING every perf comparison")
            return None
        data = os.path.join(self.tmp, "probe.data")
        try:
            r = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "--call-graph", "dwarf",
                                "-o", data, "--", "true"], capture_output=True, timeout=60,
                               env=self.perf_env())
        except (OSError, subprocess.TimeoutExpired) as e:
            log("bench: WARNING: perf does not run (%s): SKIPPING every perf comparison" % e)
            return None
        if r.returncode != 0:
            log("bench: WARNING: 'perf record' failed (rc %d): SKIPPING every perf comparison\n%s"
                % (r.returncode, r.stderr.decode(errors="replace")[-1000:]))
            return None
        return perf

    def perf_env(self):
        env = dict(os.environ)
        # perf record copies every DSO it saw into a build-id cache at the end;
        # keep doing that work (it is part of perf's cost) but in our temp dir.
        env["PERF_BUILDID_DIR"] = os.path.join(self.tmp, "buildid")
        return env

    def check_python(self):
        if os.access("/usr/bin/python3", os.X_OK):
            return "/usr/bin/python3"
        alt = shutil.which("python3")
        if alt:
            log("bench: WARNING: no /usr/bin/python3; the Python target uses %s instead "
                "(numbers are not comparable with Debian's python3)" % alt)
            return alt
        log("bench: WARNING: no python3 to use as a target: SKIPPING the Python target")
        return None

    def check_numpy(self):
        if self.python and subprocess.run([self.python, "-c", "import numpy, cv2"],
                                          capture_output=True).returncode == 0:
            return self.python
        log("bench: WARNING: %s cannot import numpy and cv2 (apt install python3-numpy python3-opencv): "
            "SKIPPING the NumPy/OpenCV target" % self.python)
        return None

    def build_targets(self):
        cc = os.environ.get("CC", "gcc")
        builds = [
            ("spin", ["-O2", "-g"]),
            ("spin2", ["-O2", "-g", "-pthread"]),
            ("deep", ["-O2", "-g", "-fomit-frame-pointer", "-fno-optimize-sibling-calls",
                      "-fasynchronous-unwind-tables"]),
        ]
        for name, flags in builds:
            out = os.path.join(self.tmp, name)
            cmd = [cc] + flags + ["-o", out, os.path.join(TARGETS, name + ".c")]
            r = subprocess.run(cmd, capture_output=True)
            if r.returncode != 0:
                log("bench: cannot compile %s: %s" % (name, r.stderr.decode(errors="replace")))
                sys.exit(2)
        self.spin = os.path.join(self.tmp, "spin")
        self.spin2 = os.path.join(self.tmp, "spin2")
        self.np_work = os.path.join(TARGETS, "np_work.py")
        self.deep = os.path.join(self.tmp, "deep")
        self.loop_py = os.path.join(TARGETS, "loop.py")

    # ---- one run of one target in one setting
    def run_setting(self, setting, target_argv, what):
        """setting: 'base', ('ember', hz) or ('perf', hz)."""
        if setting == "base":
            rc, out, err, tree, selfc, wall = run_measured(target_argv)
            if rc != 0:
                raise BenchError("%s: the target failed (exit %d): %s" % (what, rc, err[-1000:]))
            work, total = parse_target(out, what)
            return {"work": work, "total": total, "wall": wall}
        tool, hz = setting
        if tool.startswith("ember") or tool == "ref":
            folded = os.path.join(self.tmp, "out.folded")
            if os.path.exists(folded):
                os.unlink(folded)
            # ember8k: the same user-stack copy as perf's default dwarf dump
            ss = ["--stack-size", "8192"] if tool == "ember8k" else []
            exe = self.ref if tool == "ref" else self.ember
            argv = [exe, "record", "-F", str(hz)] + ss + ["-o", folded, "--"] + target_argv
            rc, out, err, tree, selfc, wall = run_measured(argv)
            if rc != 0:
                raise BenchError("%s: ember exited with status %d (%s); stderr:\n%s"
                                 % (what, rc, "killed by signal %d" % -rc if rc < 0 else
                                    "128+N means the target died of signal N" if rc > 128 else
                                    "see ember record --help", err[-3000:]))
            work, total = parse_target(out, what)
            d = parse_ember(err, what)
            if not os.path.exists(folded):
                raise BenchError("%s: ember exited 0 but wrote no %s" % (what, folded))
            fs, fpf = folded_stats(folded)
            d.update({"work": work, "total": total, "wall": wall, "folded_samples": fs,
                      "frames": fpf,
                      # external: ember's tree minus the target's own total
                      "ember_cpu_ext": tree - total,
                      "ember_cpu_schedstat": selfc})
            if fs != d["samples"]:
                d["note"] = "folded has %d samples, summary says %d" % (fs, d["samples"])
            return d
        # perf record
        data = os.path.join(self.tmp, "perf.data")
        argv = [self.perf, "record", "-q", "-e", "cpu-clock", "--call-graph", "dwarf",
                "-F", str(hz), "-o", data, "--"] + target_argv
        rc, out, err, tree, selfc, wall = run_measured(argv, env=self.perf_env())
        if rc != 0:
            raise BenchError("%s: perf record exited %d: %s" % (what, rc, err[-2000:]))
        work, total = parse_target(out, what)
        return {"work": work, "total": total, "wall": wall, "perf_record_cpu": tree - total,
                "data": data}

    def perf_script(self, data, what):
        txt = os.path.join(self.tmp, "perf-script.txt")
        rc, _, err, tree, _, wall = run_measured(
            [self.perf, "script", "-i", data], env=self.perf_env(), stdout_path=txt)
        if rc != 0:
            raise BenchError("%s: perf script exited %d: %s" % (what, rc, err[-2000:]))
        samples, fpf = perf_script_stats(txt)
        return {"perf_script_cpu": tree, "samples": samples, "frames": fpf}

    # ---- 1. slowdown
    def slowdown(self):
        settings = ["base", ("ember", 99), ("ember", 999)]
        if self.args.ember_stack_8k:
            settings.append(("ember8k", 999))
        if self.ref:
            settings += [("ref", 99), ("ref", 999)]
        if self.perf:
            settings += [("perf", 99), ("perf", 999)]
        targets = [("C loop (spin)", [self.spin, str(self.args.c_iters)])]
        if self.python:
            targets.append(("Python loop", [self.python, self.loop_py, str(self.args.py_iters)]))
        if not self.args.no_pools:
            targets.append(("C, 2 threads (spin2)", [self.spin2, str(self.args.c_iters)]))
            if self.numpy_python:
                targets.append(("NumPy + OpenCV (work's wall time)",
                                [self.numpy_python, self.np_work, str(self.args.np_rounds)]))
        rng = random.Random(12345)
        results = {}
        for tname, argv in targets:
            res = {s if s == "base" else "%s %d" % s: [] for s in settings}
            for r in range(self.args.rounds):
                order = list(settings)
                rng.shuffle(order)
                for s in order:
                    key = s if s == "base" else "%s %d" % s
                    what = "slowdown %s round %d %s" % (tname, r + 1, key)
                    d = self.run_setting(s, argv, what)
                    res[key].append(d)
                    log("  %-45s work %.3f s" % (what, d["work"]))
            results[tname] = res
        return results

    # ---- 2. per-sample CPU
    def per_sample(self):
        targets = []
        if self.python:
            targets.append(("Python loop (13 frames)", [self.python, self.loop_py,
                                                        str(self.args.py_long_iters)]))
        targets.append(("C recursion (46 frames)", [self.deep, str(self.args.depth),
                                                    str(self.args.c_long_iters)]))
        results = {}
        for tname, argv in targets:
            rows = {"ember": [], "ref": [], "perf": []}
            for r in range(self.args.ps_rounds):
                what = "per-sample %s round %d" % (tname, r + 1)
                for tool in ("ember", "ref") if self.ref else ("ember",):
                    d = self.run_setting((tool, 999), argv, what + " " + tool)
                    n = d["samples"]
                    d["summary_total_us"] = (d["capture_us"] * n + d["symbolize_ms"] * 1e3) / n if n else 0
                    d["ext_us"] = d["ember_cpu_ext"] * 1e6 / n if n else 0
                    d["schedstat_us"] = (d["ember_cpu_schedstat"] * 1e6 / n
                                         if n and d["ember_cpu_schedstat"] is not None else None)
                    rows[tool].append(d)
                    log("  %-50s %s %d samples, %.1f frames, %.1f us/sample capture, "
                        "%.1f us/sample total (ext)" % (what, tool, n, d["frames"], d["capture_us"],
                                                        d["ext_us"]))
                if self.perf:
                    p = self.run_setting(("perf", 999), argv, what + " perf")
                    p.update(self.perf_script(p["data"], what + " perf script"))
                    n = p["samples"]
                    p["record_us"] = p["perf_record_cpu"] * 1e6 / n if n else 0
                    p["script_us"] = p["perf_script_cpu"] * 1e6 / n if n else 0
                    rows["perf"].append(p)
                    log("  %-50s perf %d samples, %.1f frames, record %.1f + script %.1f us/sample"
                        % (what, n, p["frames"], p["record_us"], p["script_us"]))
            results[tname] = rows
        return results


# --------------------------------------------------------------------------
# reporting

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def pct(ratio):
    return "%+.2f%%" % ((ratio - 1) * 100)


def report_slowdown(results, lines, verdicts):
    for tname, res in results.items():
        base = [d["work"] for d in res["base"]]
        bmin, bmed = min(base), med(base)
        spread = (bmed - bmin) / bmin * 100
        lines.append("### Slowdown: %s (%d rounds, interleaved)\n" % (tname, len(base)))
        lines.append("Baseline spread (median vs min): %.2f%%.\n" % spread)
        lines.append("| setting | work CPU min (s) | median (s) | min/min | median/median |"
                     " paired median | samples/run | frames/sample | lost | truncated | unwind fail |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        ratios = {}
        for key, runs in res.items():
            w = [d["work"] for d in runs]
            rmin, rmed = min(w) / bmin, med(w) / bmed
            # the same round's baseline: robust to slow drifts of the machine
            rpair = med([a / b for a, b in zip(w, base)])
            ratios[key] = (rmin, rmed)
            if key.startswith(("ember", "ref")):
                extra = "%.0f | %.1f | %d | %d | %d" % (
                    med([d["samples"] for d in runs]), med([d["frames"] for d in runs]),
                    sum(d["lost"] for d in runs), sum(d["truncated"] for d in runs),
                    sum(d["unwind_failures"] for d in runs))
            else:
                extra = "| | | |"
            lines.append("| %s | %.3f | %.3f | %s | %s | %s | %s |" % (
                key, min(w), med(w), "1" if key == "base" else pct(rmin),
                "1" if key == "base" else pct(rmed), "1" if key == "base" else pct(rpair), extra))
        lines.append("")
        for hz, goal in ((99, 0.5), (999, 3.0)):
            k = "ember %d" % hz
            if k not in ratios:
                continue
            o_med = (ratios[k][1] - 1) * 100
            o_min = (ratios[k][0] - 1) * 100
            if o_med <= goal:
                state = "MET" + (" (but the noise, %.2f%% baseline spread, is larger than the goal: "
                                 "this only shows the overhead is below the noise)" % spread
                                 if spread > goal else "")
            elif o_med - goal <= spread:
                state = ("NOT MET on the median by %.2f points, but within the noise "
                         "(baseline spread %.2f%%): inconclusive" % (o_med - goal, spread))
            else:
                state = "NOT MET by %.2f points" % (o_med - goal)
            v = "%s, %d Hz overhead <= %.1f%%: %s (median/median %+.2f%%, min/min %+.2f%%)" % (
                tname, hz, goal, state, o_med, o_min)
            pk = "perf %d" % hz
            if pk in ratios:
                p_med = (ratios[pk][1] - 1) * 100
                p_min = (ratios[pk][0] - 1) * 100
                worse = o_med > p_med and o_min > p_min
                v += "; perf %+.2f%% / %+.2f%%: %s" % (
                    p_med, p_min, ("ember WORSE than perf on both ratios" + (
                        " (by %.2f points, within the baseline spread)" % (o_med - p_med)
                        if o_med - p_med <= spread else " (by %.2f points)" % (o_med - p_med)))
                    if worse else "ember not worse than perf")
            else:
                v += "; perf comparison skipped"
            rk = "ref %d" % hz
            if rk in ratios:
                pair = med([a["work"] / b["work"] for a, b in zip(res[k], res[rk])])
                v += ("; against the reference build: %+.2f%% / %+.2f%%, this tree / reference "
                      "%.3f (paired per round)" % ((ratios[rk][1] - 1) * 100,
                                                   (ratios[rk][0] - 1) * 100, pair))
            verdicts.append(v)


def ember_row(name, e):
    """One table row of an ember binary's per-sample runs (medians, sums)."""
    return "| %s | %.0f | %.1f | %d | %d | %d | %.1f | %.1f | %.0f | %.1f | %.1f | %s | %.0f |" % (
        name, med([d["samples"] for d in e]), med([d["frames"] for d in e]),
        sum(d["lost"] for d in e), sum(d["truncated"] for d in e),
        sum(d["unwind_failures"] for d in e), med([d["capture_us"] for d in e]),
        med([d["unwind_us"] for d in e]), med([d["symbolize_ms"] for d in e]),
        med([d["summary_total_us"] for d in e]), med([d["ext_us"] for d in e]),
        "%.1f" % med([d["schedstat_us"] for d in e])
        if any(d["schedstat_us"] is not None for d in e) else "n/a",
        # start-up + symbolization + output: external total minus capture CPU
        med([d["ember_cpu_ext"] * 1e3 - d["capture_us"] * d["samples"] / 1e3 for d in e]))


def report_per_sample(results, lines, verdicts, goals):
    for tname, rows in results.items():
        e = rows["ember"]
        ref = rows.get("ref") or []
        lines.append("### Profiler CPU per sample: %s, -F 999 (%d runs, medians)\n" % (tname, len(e)))
        lines.append("| profiler | samples | frames/sample | lost | truncated | unwind fail |"
                     " capture us/sample | unwind us/sample | symbolization ms |"
                     " total us/sample (summary) | total us/sample (external) |"
                     " ember self (schedstat) us/sample | CPU outside capture ms |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, e in (("ember", e), ("reference", ref)):
            if e:
                lines.append(ember_row(name, e))
        e = rows["ember"]
        if ref:
            cap = med([a["capture_us"] / b["capture_us"] for a, b in zip(e, ref) if b["capture_us"]])
            ext = med([a["ext_us"] / b["ext_us"] for a, b in zip(e, ref) if b["ext_us"]])
            verdicts.append("%s: this tree / reference build, per run pair: capture CPU %.3f, "
                            "whole ember CPU (external) %.3f" % (tname, cap, ext))
        p = rows["perf"]
        lines.append("")
        if p:
            lines.append("| perf | samples | frames/sample | perf record us/sample |"
                         " perf script us/sample | total us/sample |")
            lines.append("|---|---:|---:|---:|---:|---:|")
            lines.append("| perf --call-graph dwarf | %.0f | %.1f | %.1f | %.1f | %.1f |" % (
                med([d["samples"] for d in p]), med([d["frames"] for d in p]),
                med([d["record_us"] for d in p]), med([d["script_us"] for d in p]),
                med([d["record_us"] + d["script_us"] for d in p])))
            lines.append("")
        goal = goals.get(tname)
        if goal is not None:
            tot = med([d["ext_us"] for d in e])
            cap = med([d["capture_us"] for d in e])
            v = ("%s: <= %g us/sample: total incl. symbolization (external) %.1f us -> %s; "
                 "capture only %.1f us -> %s" % (
                     tname, goal, tot, "MET" if tot <= goal else "NOT MET (%.1fx)" % (tot / goal),
                     cap, "MET" if cap <= goal else "NOT MET (%.1fx)" % (cap / goal)))
            if p:
                v += "; perf record+script %.1f us" % med([d["record_us"] + d["script_us"] for d in p])
            verdicts.append(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", help="build directory holding ember (or the ember binary)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved slowdown rounds (7)")
    ap.add_argument("--ps-rounds", type=int, default=3, help="per-sample runs per target (3)")
    ap.add_argument("--c-iters", type=int, default=600000000, help="spin iterations (~1.5 s)")
    ap.add_argument("--py-iters", type=int, default=16000000, help="Python loop iterations (~1.5 s)")
    ap.add_argument("--c-long-iters", type=int, default=2000000000, help="deep spin iterations (~5 s)")
    ap.add_argument("--py-long-iters", type=int, default=56000000, help="Python iterations (~5 s)")
    ap.add_argument("--np-rounds", type=int, default=1400, help="np_work.py rounds (~1.5 s)")
    ap.add_argument("--no-pools", action="store_true",
                    help="slowdown: skip the two-thread C target and the NumPy/OpenCV one")
    ap.add_argument("--depth", type=int, default=40, help="rec() depth; stack = DEPTH+6 frames")
    ap.add_argument("--ember-stack-8k", action="store_true",
                    help="slowdown: also ember -F 999 --stack-size 8192 (perf's default dump)")
    ap.add_argument("--no-perf", action="store_true", help="skip the perf comparisons")
    ap.add_argument("--ref", metavar="EMBER",
                    help="also run this ember binary (or build dir) in the same rounds and report "
                         "this tree's ratio to it")
    ap.add_argument("--only", choices=["slowdown", "per-sample"], help="run one part only")
    ap.add_argument("--json", help="also write the raw per-run results to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--render", metavar="JSON", help="only print the report of a --json file")
    args = ap.parse_args()

    if args.render:
        with open(args.render) as f:
            raw = json.load(f)
        lines, verdicts = [], []
        if "slowdown" in raw:
            report_slowdown(raw["slowdown"], lines, verdicts)
        if "per_sample" in raw:
            report_per_sample(raw["per_sample"], lines, verdicts,
                              {"Python loop (13 frames)": 5.0, "C recursion (46 frames)": 15.0})
        lines.append("### Verdicts\n")
        lines.extend("- " + v for v in verdicts)
        print("\n".join(lines))
        return

    b = Bench(args)
    t0 = time.monotonic()
    lines, verdicts, raw = [], [], {}
    try:
        uname = os.uname()
        lines.append("Run %s on %s (%s, %d CPUs, load average %s); ember %s; perf %s; target python %s.\n" % (
            time.strftime("%Y-%m-%d %H:%M"), uname.nodename, uname.release, os.cpu_count(),
            " ".join("%.1f" % x for x in os.getloadavg()), b.ember,
            subprocess.run([b.perf, "--version"], capture_output=True, text=True).stdout.strip()
            if b.perf else "SKIPPED (not available)", b.python or "SKIPPED")
            + ("Reference build: %s.\n" % b.ref if b.ref else ""))
        if args.only in (None, "slowdown"):
            log("bench: target slowdown, %d rounds" % args.rounds)
            raw["slowdown"] = b.slowdown()
            report_slowdown(raw["slowdown"], lines, verdicts)
        if args.only in (None, "per-sample"):
            log("bench: profiler CPU per sample, %d runs per target" % args.ps_rounds)
            raw["per_sample"] = b.per_sample()
            report_per_sample(raw["per_sample"], lines, verdicts,
                              {"Python loop (13 frames)": 5.0, "C recursion (46 frames)": 15.0})
    except BenchError as e:
        log("bench: FAILED: %s" % e)
        sys.exit(1)
    finally:
        if not args.keep:
            shutil.rmtree(b.tmp, ignore_errors=True)
        else:
            log("bench: temp dir kept: %s" % b.tmp)
    lines.append("### Verdicts\n")
    lines.extend("- " + v for v in verdicts)
    lines.append("\nBench wall time: %.0f s." % (time.monotonic() - t0))
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1, default=str)


if __name__ == "__main__":
    main()
