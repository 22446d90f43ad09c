"""idle: `ember record --idle` (wall-clock profiles: time off CPU charged to
the stack a thread stopped in), on tests/python/idle_mix.py, whose main
thread sleeps 50% of its time in napping(), blocks 25% on a pipe in
waiting() (a child writes after the delay) and computes 25% in crunching().
- --idle --threads: under the main thread's root, napping, waiting and
  crunching each hold their wall share of its time within 5 pp; the
  summary splits its time, >= 70% off CPU, and its total is the run's
  wall time within 10%;
- the .ember file keeps it: converted to folded it is the recorded folded
  file, and `ember report` prints the on/off-CPU split;
- --idle --python-only: the same shares, Python frames only;
- without --idle: napping and waiting hold <= 3% of the samples (a sleeping
  thread gets no samples of the CPU clock);
- two threads computing pure Python at once (`gil`): each has >= 10% of its
  time in take_gil right under its Python function crunching;
- attached (-p, -d) to a thread that computes and then sleeps past the
  end of the run: the sleep it is in when the run ends counts up to the
  end (napping >= 0.8 s, the main thread's total >= 80% of the run);
- as user nobody (setpriv; no BPF): one line says --idle is not available,
  and the run still exits 0 with the on-CPU profile.
Skips (77) unless run as root: the tracer needs CAP_BPF and CAP_PERFMON."""
import grp
import os
import pwd
import re
import shutil
import subprocess
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "python", "idle_mix.py")
PY = E.PYTHON
SECONDS = 2.0
SHARES = {"napping": 50.0, "waiting": 25.0, "crunching": 25.0}
TOL_PP = 5.0

if os.geteuid() != 0:
    E.skip("not root: --idle needs CAP_BPF and CAP_PERFMON")
if not os.access(PY, os.X_OK):
    E.skip("%s not installed" % PY)
chk = E.Checker("e2e.idle")
tmp = E.tmpdir()


def in_func(frames, name):
    return any(f.startswith(name + " (") for f in frames)


def main_root(prof):
    roots = [r for r in prof.by_root() if r.startswith("MainThread (")]
    return roots[0] if roots else None


def check_shares(prof, what):
    root = main_root(prof)
    chk.check(root is not None, "%s: a MainThread root" % what, prof.top())
    if root is None:
        return
    stacks = prof.by_root()[root]
    total = sum(c for _, c in stacks)
    for name, want in SHARES.items():
        got = 100.0 * sum(c for f, c in stacks if in_func(f, name)) / total if total else 0
        chk.check(abs(got - want) <= TOL_PP, "%s: %s holds %.1f%% of the main thread's time (want %.0f +- %.0f pp)"
                  % (what, name, got, want, TOL_PP), prof.top())


# --idle --threads, with the .ember file beside
folded, ember_file = os.path.join(tmp, "idle.folded"), os.path.join(tmp, "idle.ember")
res = E.record(["--idle", "--threads", "-o", folded, "-o", ember_file], [PY, SCRIPT, str(SECONDS)])
chk.check(res.rc == 0, "--idle: ember exits 0 (got %s)" % res.rc, res.describe())
chk.check("on-CPU samples only" not in res.stderr, "--idle: no line saying off-CPU time is not traced", res.stderr)
m = re.search(r"--idle: (\d+) intervals off CPU traced, (\d+) lost", res.stderr)
chk.check(m and int(m.group(1)) > 0 and int(m.group(2)) == 0, "--idle: the summary counts intervals traced, none lost",
          res.stderr)
prof = E.load_profile(chk, folded, res)
E.check_format(chk, prof)
check_shares(prof, "--idle --threads")
# (a line per thread when there are several: the forked writer may be one)
m = re.search(r"thread (\d+) MainThread: ([0-9.]+) s on CPU, ([0-9.]+) s off CPU", res.stderr) or \
    re.search(r"wall-clock profile: ()([0-9.]+) s on CPU \(.*\), ([0-9.]+) s off CPU", res.stderr)
chk.check(m is not None, "--idle: the summary splits the main thread's time on and off CPU", res.stderr)
wall = re.search(r"ember: wall ([0-9.]+) s", res.stderr)
if m and wall:
    on, off = float(m.group(2)), float(m.group(3))
    chk.check(off >= 0.70 * (on + off), "--idle: main thread %.3f s off CPU of %.3f s (>= 70%%)" % (off, on + off))
    w = float(wall.group(1))
    chk.check(abs(on + off - w) <= 0.1 * w, "--idle: main thread's time %.3f s is the run's wall %.3f s within 10%%"
              % (on + off, w))

# the .ember file: the same profile, and the split in report
again = os.path.join(tmp, "again.folded")
res2 = E.run([E.ember(), "convert", "--threads", ember_file, "-o", again])
chk.check(res2.rc == 0 and os.path.exists(again), "convert .ember -> folded exits 0", res2.describe())
if os.path.exists(again) and os.path.exists(folded):
    chk.check(open(again).read() == open(folded).read(), "the .ember file converts to the recorded folded file")
res3 = E.run([E.ember(), "report", ember_file, "--top", "3"])
chk.check(res3.rc == 0 and re.search(r"wall-clock profile: [0-9.]+ s on CPU .*, [0-9.]+ s off CPU", res3.stdout),
          "report of the .ember file prints the on/off-CPU split", res3.describe())

# the SVG colours off-CPU time apart and says so; diff reads wall-clock profiles
svg = os.path.join(tmp, "idle.svg")
res4 = E.run([E.ember(), "convert", ember_file, "-o", svg])
text = open(svg).read() if os.path.exists(svg) else ""
chk.check(res4.rc == 0 and 'id="offcpulegend"' in text, "the SVG has the off-CPU legend", res4.describe())
nap = re.search(r"<title>napping \(idle_mix.py:\d+\) \(([0-9,]+) us, [0-9.]+%, (\d+)% off CPU\)</title><rect[^>]*"
                r'fill="#([0-9a-f]{6})"', text)
chk.check(nap and int(nap.group(2)) >= 95, "the SVG's napping frame is >= 95% off CPU (tooltip)")
if nap:
    r, g, b = (int(nap.group(3)[i:i + 2], 16) for i in (0, 2, 4))
    chk.check(b > r > g, "the SVG draws napping in the off-CPU (violet) colours: #%s" % nap.group(3))
res5 = E.run([E.ember(), "diff", ember_file, ember_file, "--normalize", "absolute"])
chk.check(res5.rc == 0 and re.search(r"BASE: .*wall-clock profile, [0-9.]+ s off CPU", res5.stderr + res5.stdout),
          "ember diff reads the wall-clock profiles and says so", res5.describe())

# --idle --python-only
pyonly = os.path.join(tmp, "pyonly.folded")
res = E.record(["--idle", "--threads", "--python-only", "-o", pyonly], [PY, SCRIPT, str(SECONDS)])
chk.check(res.rc == 0, "--idle --python-only: exits 0 (got %s)" % res.rc, res.describe())
check_shares(E.load_profile(chk, pyonly, res), "--idle --python-only")

# without --idle: no time in the sleeps
oncpu = os.path.join(tmp, "oncpu.folded")
res = E.record(["--threads", "-o", oncpu], [PY, SCRIPT, str(SECONDS)])
chk.check(res.rc == 0, "without --idle: exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, oncpu, res)
asleep = prof.count(lambda f: in_func(f, "napping") or in_func(f, "waiting"))
chk.check(prof.total > 0 and asleep <= 0.03 * prof.total,
          "without --idle: napping and waiting hold %d of %d samples (<= 3%%)" % (asleep, prof.total), prof.top())

# threads waiting for the GIL
gil = os.path.join(tmp, "gil.folded")
res = E.record(["--idle", "--threads", "-o", gil], [PY, SCRIPT, "1.5", "gil"])
chk.check(res.rc == 0, "gil: exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, gil, res)
for root, stacks in sorted(prof.by_root().items()):
    if not root.startswith("contender-"):
        continue
    total = sum(c for _, c in stacks)
    waits = sum(c for f, c in stacks if any(f[i].startswith("take_gil") and f[i - 1].startswith("crunching (")
                                             for i in range(1, len(f))))
    chk.check(total and waits >= 0.10 * total, "gil: %s has %.1f%% of its time in crunching;take_gil (>= 10%%)"
              % (root, 100.0 * waits / total if total else 0), prof.top())
chk.check(sum(1 for r in prof.by_root() if r.startswith("contender-")) == 2, "gil: both contender threads have roots",
          prof.top())

# attached to a thread that computes 2 s (attaching takes most of a second),
# then sleeps past the run's end:
# the interval open when the run ends is charged up to the end
tail = os.path.join(tmp, "tail.folded")
proc = subprocess.Popen([PY, SCRIPT, "8", "tail"], stdout=subprocess.PIPE, text=True)
try:
    proc.stdout.readline()
    res = E.record(["--idle", "--threads", "-p", str(proc.pid), "-d", "3", "-o", tail])
finally:
    proc.kill()
    proc.wait()
chk.check(res.rc == 0, "tail: exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, tail, res)
root = main_root(prof)
stacks = prof.by_root().get(root, []) if root else []
total = sum(c for _, c in stacks)
nap = sum(c for f, c in stacks if in_func(f, "napping"))
# (an --idle profile counts microseconds)
# (the sleep starts 2 s after the script and the run ends 3 s after the
# attach, which comes after the script's start: >= 1 s of it in the run)
chk.check(total >= 0.8 * 3e6 and nap >= 0.8e6,
          "tail: the main thread has %.2f s, %.2f s in napping, the sleep open at the end (want >= 2.4 s, >= 0.8 s)"
          % (total / 1e6, nap / 1e6), prof.top())

# as nobody: one line, and the on-CPU profile
setpriv = shutil.which("setpriv")
try:
    nobody = pwd.getpwnam("nobody")
    group = grp.getgrgid(nobody.pw_gid).gr_name
except KeyError:
    nobody = None
if not setpriv or not nobody:
    print("SKIPPED (loudly): the unprivileged check needs setpriv and user nobody", flush=True)
else:
    bindir, outdir = E.tmpdir(0o755), E.tmpdir(0o700)
    ember_copy = os.path.join(bindir, "ember")
    shutil.copy(E.ember(), ember_copy)
    os.chmod(ember_copy, 0o755)
    os.chown(outdir, nobody.pw_uid, nobody.pw_gid)
    out = os.path.join(outdir, "nobody.folded")
    res = E.run([setpriv, "--reuid=%d" % nobody.pw_uid, "--regid=%s" % group, "--clear-groups", "--", ember_copy,
                 "record", "--idle", "-o", out, "--", E.target("chain"), "0.5"],
                env={"PATH": "/usr/bin:/bin", "HOME": outdir, "LANG": "C"}, cwd=outdir)
    lines = [l for l in res.stderr.splitlines() if "--idle" in l]
    chk.check(res.rc == 0, "as nobody: --idle exits 0 (got %s)" % res.rc, res.describe())
    chk.check(len(lines) == 1 and "on-CPU" in lines[0], "as nobody: one line says --idle is not available",
              res.stderr)
    prof = E.load_profile(chk, out, res)
    chk.check(prof.count(lambda f: "hot" in f) >= 0.9 * prof.total > 0, "as nobody: the on-CPU profile of chain",
              prof.top(5))
chk.finish()
