"""mount_ns: a target whose binary exists only in its own mount namespace (as
in a container) is still symbolized: ember reads it through /proc/PID/root.

The chain target is copied onto a tmpfs mounted inside `unshare -m`; from
ember's namespace that path is an empty directory.  Both attach (-p) and
launch mode must find main;a;b;hot in >= 90% of samples.  Then the same for
a Python interpreter (Debian's python3, copied onto the tmpfs): its runtime
is found and its frames merged.  Needs root.
"""
import os
import shutil
import subprocess
import time
import emberlib as E

if os.geteuid() != 0:
    E.skip("needs root to create a mount namespace")
if not shutil.which("unshare"):
    E.skip("unshare (util-linux) is not installed")

chk = E.Checker("e2e.mount_ns")
d = E.tmpdir()
hidden = os.path.join(d, "ns-only")
os.mkdir(hidden)
script = ("mount -t tmpfs tmpfs {h} && cp {t} {h}/chain-in-ns && exec {h}/chain-in-ns {secs}")
chain = E.target("chain")


def check_profile(tag, out, res):
    prof = E.load_profile(chk, out, res)
    total = prof.total
    good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "a", "b", "hot"), ("mix", "tgt_now")))
    chk.check(total > 0 and good >= 0.9 * total,
              "%s: main;a;b;hot in >= 90%% of samples: %d of %d" % (tag, good, total), prof.top())


# Attach to a process inside the namespace.
proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                         script.format(h=hidden, t=chain, secs="4")], stdout=subprocess.DEVNULL)
try:
    deadline = time.time() + 5
    while time.time() < deadline and not os.readlink("/proc/%d/exe" % proc.pid).endswith("chain-in-ns"):
        time.sleep(0.05)
    chk.check(not os.path.exists(os.path.join(hidden, "chain-in-ns")),
              "the target's binary is invisible from ember's namespace")
    out = os.path.join(d, "attach.folded")
    res = E.record(["-p", str(proc.pid), "-d", "1.5", "-o", out])
    chk.check(res.rc == 0, "attach exits 0 (got %s)" % res.rc, res.describe())
    check_profile("attach", out, res)
finally:
    proc.kill()
    proc.wait()

# Launch a command that enters its own namespace before exec.
out = os.path.join(d, "launch.folded")
res = E.record(["-o", out], ["unshare", "-m", "--propagation", "private", "sh", "-c",
                             script.format(h=hidden, t=chain, secs="1.5")])
chk.check(res.rc == 0, "launch exits 0 (got %s)" % res.rc, res.describe())
check_profile("launch", out, res)

# A Python interpreter that exists only inside the namespace: Debian's
# python3 (static libpython, so one file) copied onto the tmpfs; its standard
# library is the host's.  ember must find the runtime, its symbols and its
# build-id through /proc/PID/root, and merge the Python frames.
PY_SCRIPT = """
import time, zlib
def burn_in_ns():
    data = bytes(range(256)) * 400
    end = time.time() + 4
    while time.time() < end:
        zlib.compress(data, 9)
burn_in_ns()
"""
pyfile = os.path.join(d, "in_ns.py")
with open(pyfile, "w") as f:
    f.write(PY_SCRIPT)
real_py = os.path.realpath(E.PYTHON)
if not os.path.exists(real_py):
    chk.check(False, "%s exists (installed by the project's install step)" % E.PYTHON)
    chk.finish()
py_script = "mount -t tmpfs tmpfs {h} && cp {py} {h}/python3-in-ns && exec {h}/python3-in-ns {s}"
proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                         py_script.format(h=hidden, py=real_py, s=pyfile)], stdout=subprocess.DEVNULL)
try:
    deadline = time.time() + 5
    while time.time() < deadline and not os.readlink("/proc/%d/exe" % proc.pid).endswith("python3-in-ns"):
        time.sleep(0.05)
    time.sleep(0.3)   # past interpreter start-up
    chk.check(not os.path.exists(os.path.join(hidden, "python3-in-ns")),
              "the interpreter is invisible from ember's namespace")
    out = os.path.join(d, "python.folded")
    res = E.record(["-p", str(proc.pid), "-d", "1.5", "-o", out])
    chk.check(res.rc == 0, "python attach exits 0 (got %s)" % res.rc, res.describe())
    chk.check("python3-in-ns" in res.stderr and "Python 3." in res.stderr,
              "the runtime is found in the namespace-only interpreter", res.stderr)
    prof = E.load_profile(chk, out, res)
    good = prof.count(lambda fr: any(f.startswith("burn_in_ns (in_ns.py:") for f in fr))
    chk.check(prof.total > 0 and good >= 0.9 * prof.total,
              "Python frames merged: burn_in_ns in >= 90%% of samples: %d of %d" % (good, prof.total),
              prof.top())
finally:
    proc.kill()
    proc.wait()
chk.finish()
