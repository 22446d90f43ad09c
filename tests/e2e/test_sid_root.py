"""sid_root: CPython 3.14 and 3.15 from the Debian sid root (make sid-root),
profiled from the host, running code that exists only inside that root.

usage: test_sid_root.py --ember E --targets T --root ROOT
For each version V (3.14, 3.15), a Python program (app.py, below) and the
embedding program py_embed (tests/targets) are written into
ROOT/opt/ember-sid-only (a directory the host does not have; removed at the
end), and run inside the root by tests/sid/in-root.sh, which execs the
command in place (the pid ember launches or attaches to is the program's):

- `py_embed libpython3.V.so.1.0 app.py` under `ember record
  --native-unfiltered -o .folded -o .prof` (the root's libpython, not the
  static copy in /usr/bin/python3.V):
  native frames: every frame of libpython3.V.so.1.0 named (its static
  functions too: from python3.V-dbg's debug file, inside the root only) and
  the eval loop among them; py_embed's main; NumPy's matrix product reaching
  the root's reference BLAS (dgemm_, named) and zlib's deflate, their
  stacks whole from main through the eval loop (>= 95%); at most 2% unwind
  failures;
  Python frames: the summary names Python 3.V; <module>;main;work;matmul_step
  over dgemm_ and <module>;main;work;compress_step over deflate, each
  Python frame at the line it runs (app.py is known line by line);
  pstats: the root's own python3.V loads the .prof file and finds deflate
  (native) and compress_step (Python) with their shares of the samples;
- `ember record --native-unfiltered -p PID` attached to /usr/bin/python3.V
  running app.py inside the root: python3.V's static functions named (its
  debug file is in the root), deflate's stacks whole from Py_BytesMain
  through the eval loop, the summary, and the Python chain at its lines.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import emberlib as E

# Sample counts: the programs run for a fixed wall time; on a loaded 2-core
# machine they get a third of a CPU or less (113 samples in 2.5 s seen), so
# the minimums below only make sure there is something to judge.

HERE = os.path.dirname(os.path.abspath(__file__))
IN_ROOT = os.path.join(HERE, "..", "sid", "in-root.sh")
VERSIONS = ("3.14", "3.15")
ONLY = "/opt/ember-sid-only"      # exists only inside the root
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")

APP = '''\
import sys
import time
import zlib

import numpy as np


def matmul_step(a):
    return a @ a                              # LINE-MATMUL


def compress_step(data):
    return zlib.compress(data, 6)             # LINE-COMPRESS


def work(a, data, seconds, ready):
    end = time.time() + seconds
    while True:
        matmul_step(a)                        # LINE-WORK-MATMUL
        compress_step(data)                   # LINE-WORK-COMPRESS
        if ready:
            open(ready, "w").close()
            ready = None
        if time.time() > end:
            break


def main():
    seconds = float(sys.argv[1])
    ready = sys.argv[2] if len(sys.argv) > 2 else None
    rng = np.random.default_rng(1)
    a = rng.random((400, 400))
    data = rng.integers(0, 4, 1 << 18, dtype=np.uint8).tobytes()
    work(a, data, seconds, ready)             # LINE-MAIN


main()                                        # LINE-MODULE
'''
LINES = {m.group(1): n for n, line in enumerate(APP.splitlines(), 1)
         for m in [re.search(r"# (LINE-[A-Z-]+)", line)] if m}

PSTATS = r'''
import pstats, sys
s = pstats.Stats(sys.argv[1])
total = sum(v[2] for v in s.stats.values())
def share(name):
    hits = [v[3] for k, v in s.stats.items() if k[2] == name]
    return max(hits) / total if hits and total else 0.0
print("VERSION %d.%d" % sys.version_info[:2])
print("DEFLATE %.4f" % share("<deflate>"))
print("COMPRESS_STEP %.4f" % share("compress_step"))
'''


def root_arg():
    for i, a in enumerate(sys.argv):
        if a == "--root" and i + 1 < len(sys.argv):
            root = sys.argv[i + 1]
            del sys.argv[i:i + 2]
            return root
    E.fail_now("--root ROOT is required")


ROOT = root_arg()
if os.geteuid() != 0:
    E.skip("running programs inside the sid root needs root (unshare -m, chroot)")
if not os.path.exists(os.path.join(ROOT, "etc/ember-sid-root.stamp")):
    E.skip("no sid root at %s: make sid-root" % ROOT)
if os.path.exists(ONLY):
    E.fail_now("%s exists on the host: the test needs a path only the root has" % ONLY)
E.args()
chk = E.Checker("e2e.sid_root")
d = E.tmpdir()

only = ROOT + ONLY
shutil.rmtree(only, ignore_errors=True)
os.makedirs(only)
if not os.environ.get("EMBER_E2E_KEEP"):
    import atexit
    atexit.register(shutil.rmtree, only, True)
with open(os.path.join(only, "app.py"), "w") as f:
    f.write(APP)
shutil.copy(E.target("py_embed"), os.path.join(only, "py_embed"))
APP_PATH = ONLY + "/app.py"


def in_root(*cmd):
    return ["sh", IN_ROOT, ROOT, "--"] + list(cmd)


def py_chain(fr):
    """The Python frames of a stack as (name, basename, line), root first."""
    out = []
    for f in fr:
        m = PYFRAME.match(f)
        if m:
            out.append((m.group(1), os.path.basename(m.group(2)), int(m.group(3))))
    return out


def nearest_python(fr, idx):
    for j in range(idx - 1, -1, -1):
        m = PYFRAME.match(fr[j])
        if m:
            return (m.group(1), os.path.basename(m.group(2)), int(m.group(3)))
    return None


def with_native(prof, name):
    """(frames, count, index of the outermost `name` frame) of the stacks through native `name`."""
    return [(fr, c, fr.index(name)) for fr, c in prof.stacks if name in fr]


def expect_chain(step, line_key):
    return [("<module>", "app.py", LINES["LINE-MODULE"]), ("main", "app.py", LINES["LINE-MAIN"]),
            ("work", "app.py", LINES["LINE-WORK-" + line_key]), (step, "app.py", LINES["LINE-" + line_key])]


def check_python(tag, prof, native, step, line_key):
    """native's samples sit under <module>;main;work;step, each at its line."""
    rows = with_native(prof, native)
    want = expect_chain(step, line_key)
    tot = sum(c for _, c, _ in rows)
    good = sum(c for fr, c, i in rows if py_chain(fr[:i]) == want)
    chk.check(tot >= 10 and good >= 0.9 * tot,
              "%s: %s under %s at their lines: %d of %d" %
              (tag, native, ";".join("%s:%d" % (n, l) for n, _, l in want), good, tot), prof.top(8))


def check_whole(tag, prof, native, root_fn):
    """native's stacks are whole: from root_fn through the eval loop."""
    rows = with_native(prof, native)
    tot = sum(c for _, c, _ in rows)
    good = sum(c for fr, c, i in rows if root_fn in fr[:i] and
               any(f.startswith("_PyEval_EvalFrameDefault") for f in fr[:i]))
    chk.check(tot >= 10 and good >= 0.95 * tot, "%s: %s's stacks whole, from %s through the eval loop: %d of %d"
              % (tag, native, root_fn, good, tot), prof.top(8))


def check_embedded(ver):
    tag = "py_embed + libpython%s.so.1.0" % ver
    lib = "/usr/lib/x86_64-linux-gnu/libpython%s.so.1.0" % ver
    if os.path.exists(lib):
        E.fail_now("%s exists on the host: this check needs a library only the root has" % lib)
    folded, prof_path = os.path.join(d, "embed-%s.folded" % ver), os.path.join(d, "embed-%s.prof" % ver)
    res = E.record(["--native-unfiltered", "-o", folded, "-o", prof_path],
                   in_root(ONLY + "/py_embed", lib, APP_PATH, "2.5"), timeout=90)
    chk.check(res.rc == 0, "%s: ember exits 0" % tag, res.describe())
    prof = E.load_profile(chk, folded, res)
    E.check_format(chk, prof)
    s = E.parse_summary(res.stderr)
    chk.check(s is not None and s["samples"] >= 50 and s["unwind_failures"] <= 0.02 * s["samples"],
              "%s: stacks unwound whole (%s)" % (tag, s), res.stderr)

    # Native frames of files only the root has, named.
    raw_lib = prof.count(lambda fr: any(f.startswith("[libpython%s.so.1.0+" % ver) for f in fr))
    chk.check(prof.total >= 50 and raw_lib <= max(1, 0.01 * prof.total),
              "%s: libpython's frames are named (%d of %d samples have a bare address in it)"
              % (tag, raw_lib, prof.total), prof.top(8))
    named = prof.frames()
    for fn, why in (("_PyEval_EvalFrameDefault", "libpython's eval loop"),
                    ("pymain_run_python", "static in libpython: named from the root's debug file"),
                    ("Py_BytesMain", "exported by libpython"), ("main", "py_embed's, inside the root only")):
        chk.check(fn in named, "%s: %s on the stacks (%s)" % (tag, fn, why), prof.top(4))
    for native, caller in (("dgemm_", "matmul_step"), ("deflate", "compress_step")):
        n = prof.count(lambda fr: native in fr)
        chk.check(n >= 0.1 * prof.total, "%s: %s (%s's native work) named in %d of %d samples"
                  % (tag, native, caller, n, prof.total), prof.top(8))
        check_whole(tag, prof, native, "main")

    # Python frames merged in, at their lines, and the interpreter named.
    chk.check(re.search(r"Python %s\.\d+" % re.escape(ver), res.stderr) is not None and
              "not supported" not in res.stderr,
              "%s: the summary names Python %s and reads its frames" % (tag, ver), res.stderr)
    check_python(tag, prof, "dgemm_", "matmul_step", "MATMUL")
    check_python(tag, prof, "deflate", "compress_step", "COMPRESS")

    # The root's own pstats reads the file ember wrote.
    r = E.run(in_root("/usr/bin/python" + ver, "-c", PSTATS, prof_path), quiet=True)
    got = dict(re.findall(r"^([A-Z_]+) (\S+)$", r.stdout, re.M))
    chk.check(r.rc == 0 and got.get("VERSION") == ver, "pstats of Python %s loads ember's file (%s)"
              % (ver, got.get("VERSION")), r.stdout + r.stderr[-2000:])
    dshare = float(got.get("DEFLATE", 0))
    chk.check(0.1 <= dshare <= 0.95, "pstats of Python %s: deflate's cumulative share %.3f" % (ver, dshare),
              r.stdout)
    cshare = float(got.get("COMPRESS_STEP", 0))
    chk.check(cshare >= dshare >= 0.1, "pstats of Python %s: compress_step's cumulative share %.3f (>= deflate's)"
              % (ver, cshare), r.stdout)


def check_chroot_launch(ver):
    """Launched through plain chroot(8), as a user would: the launcher maps
    the host's libc under the path the root's has, and NumPy's libraries
    arrive later (a read of /proc/PID/maps): every stack must still unwind
    through the root's libc."""
    tag = "chroot(8) + python%s" % ver
    folded = os.path.join(d, "chroot-%s.folded" % ver)
    res = E.record(["--native-unfiltered", "-o", folded],
                   ["chroot", ROOT, "/usr/bin/python" + ver, APP_PATH, "2.5"], timeout=90)
    chk.check(res.rc == 0, "%s: ember exits 0" % tag, res.describe())
    prof = E.load_profile(chk, folded, res)
    s = E.parse_summary(res.stderr)
    chk.check(s is not None and s["samples"] >= 50 and s["unwind_failures"] <= 0.02 * s["samples"],
              "%s: stacks unwound whole (%s)" % (tag, s), res.stderr)
    for native in ("dgemm_", "deflate"):
        check_whole(tag, prof, native, "Py_BytesMain")
    check_python(tag, prof, "dgemm_", "matmul_step", "MATMUL")
    check_python(tag, prof, "deflate", "compress_step", "COMPRESS")


def check_attach(ver):
    tag = "attached to python%s" % ver
    ready = os.path.join(d, "ready-%s" % ver)
    p = subprocess.Popen(in_root("/usr/bin/python" + ver, APP_PATH, "30", ready), stdout=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while not os.path.exists(ready) and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        chk.check(os.path.exists(ready), "%s: app.py started inside the root" % tag)
        exe = os.readlink("/proc/%d/exe" % p.pid) if p.poll() is None else "?"
        chk.check(exe == os.path.join(ROOT, "usr/bin/python" + ver),
                  "%s: the pid started is the interpreter itself (%s)" % (tag, exe))
        out = os.path.join(d, "attach-%s.folded" % ver)
        res = E.record(["--native-unfiltered", "-p", str(p.pid), "-d", "1.5", "-o", out], timeout=60)
        chk.check(res.rc == 0, "%s: ember exits 0" % tag, res.describe())
        prof = E.load_profile(chk, out, res)
        raw = prof.count(lambda fr: any(f.startswith("[python%s+" % ver) for f in fr))
        chk.check(prof.total >= 30 and raw <= max(1, 0.01 * prof.total),
                  "%s: the interpreter's frames are named (%d of %d samples have a bare address in it)"
                  % (tag, raw, prof.total), prof.top(8))
        chk.check(prof.count(lambda fr: "deflate" in fr) >= 0.1 * prof.total, "%s: deflate named" % tag,
                  prof.top(8))
        check_whole(tag, prof, "deflate", "Py_BytesMain")
        chk.check(re.search(r"Python %s\.\d+" % re.escape(ver), res.stderr) is not None and
                  "not supported" not in res.stderr,
                  "%s: the summary names Python %s and reads its frames" % (tag, ver), res.stderr)
        check_python(tag, prof, "deflate", "compress_step", "COMPRESS")
        chk.check(p.poll() is None, "%s: the program runs on after ember detached" % tag)
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait()


def root_mounts():
    """Mounts of the host's table at or under the root."""
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if l.split()[4] == ROOT or l.split()[4].startswith(ROOT + "/")]


for ver in VERSIONS:
    if not os.path.exists(os.path.join(ROOT, "usr/bin/python" + ver)):
        chk.check(False, "the sid root has /usr/bin/python%s (make sid-root brings it up to date)" % ver)
        continue
    check_embedded(ver)
    check_chroot_launch(ver)
    check_attach(ver)
left = root_mounts()
chk.check(not left, "nothing mounted under the root in the host's mount table (the runs' mounts stayed in "
          "their own namespaces): %s" % left)
chk.finish()
