"""pid_ns: Python frames across pid namespaces (containers).

Thread ids differ between pid namespaces: CPython records a thread's id in
its own namespace (native_thread_id, glibc's struct pthread), ember's samples
carry the id ember sees, and the kernel's frame copier (BPF) must look the
thread up by the latter.  Two cases, with Debian's python3 on zlib_pair.py:
- ember itself inside a new pid namespace (`unshare --pid --fork
  --mount-proc`, as in a container), launching the script: it sees ids of
  its own namespace, and so must the copier;
- ember outside, attached (-p) to a script running in its own pid namespace.
Each: exit 0, frames copied at >= 90% of the samples' reads, and
deflate/inflate under compress_step/decompress_step.  The attached case also
with --no-copier (the thread ids alone, mapped through NSpid), and on the pyenv
3.9 build when present (ids from struct pthread, calibrated in the target's
namespace).  Needs root.
"""
import os
import re
import shutil
import subprocess
import time
import emberlib as E

if os.geteuid() != 0:
    E.skip("needs root to create a pid namespace")
if not shutil.which("unshare"):
    E.skip("unshare (util-linux) is not installed")
PY = "/usr/bin/python3"
if not os.access(PY, os.X_OK):
    E.skip("%s is not installed" % PY)
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "zlib_pair.py")

chk = E.Checker("e2e.pid_ns")


def check(tag, out, res):
    chk.check(res.rc == 0, "%s: ember exits 0" % tag, res.describe())
    ok, text = E.copies(res, 0.9, 50)
    chk.check(ok, "%s: frames copied at >= 90%% of the samples (%s)" % (tag, text), res.stderr)
    prof = E.load_profile(chk, out, res)
    total = wrong = 0
    for fr, c in prof.stacks:
        names = [f.split(" (")[0] for f in fr]
        for i, n in enumerate(names):
            own = {"deflate": "compress_step", "inflate": "decompress_step"}.get(n)
            if own:
                total += c
                callers = [x for x in names[:i] if x in ("compress_step", "decompress_step", "<module>")]
                wrong += c if not callers or callers[-1] not in (own, "<module>") else 0
                break
    chk.check(total >= 50 and wrong <= 0.02 * total,
              "%s: deflate/inflate under their own callers (%d of %d wrong)" % (tag, wrong, total), prof.top(8))


out = os.path.join(E.tmpdir(), "inside.folded")
res = E.run(["unshare", "--pid", "--fork", "--mount-proc", E.ember(), "record", "-o", out, "--", PY, SCRIPT, "2"],
            timeout=90)
check("ember in its own pid namespace", out, res)



def attached(py, label):
    """The target in its own pid namespace, ember outside: -p takes the pid ember sees."""
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", py, SCRIPT, "8"], start_new_session=True)
    try:
        pid = None
        for _ in range(50):
            time.sleep(0.1)
            kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            if kids:
                pid = int(kids[0])
                break
        chk.check(pid is not None, "%s: the script started inside its namespace" % label)
        if not pid:
            return
        time.sleep(1.0)   # past its imports
        for flags in ([], ["--no-copier"]):
            out = os.path.join(E.tmpdir(), "attached.folded")
            res = E.record(["-p", str(pid), "-d", "3", "-o", out] + flags, timeout=60)
            tag = "%s, attached from outside its pid namespace%s" % (label, " (--no-copier)" if flags else "")
            if flags:
                chk.check(res.rc == 0, "%s: ember exits 0" % tag, res.describe())
                chk.check("copied by the kernel" not in res.stderr, "%s: no frames copied" % tag, res.stderr)
                prof = E.load_profile(chk, out, res)
                py_samples = prof.count(lambda f: any(x.startswith(("compress_step (", "decompress_step ("))
                                                      for x in f))
                chk.check(py_samples >= 0.8 * prof.total, "%s: Python frames merged (%d of %d samples in "
                          "compress_step/decompress_step)" % (tag, py_samples, prof.total), prof.top(8))
            else:
                check(tag, out, res)
    finally:
        E.kill_group(proc.pid)
        proc.wait()


attached(PY, "Debian's python3")
py39 = os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions", "3.9.18", "bin",
                    "python3")
if os.access(py39, os.X_OK):
    attached(py39, "pyenv 3.9")
else:
    print("SKIP (part): %s not installed: no struct pthread case" % py39)
chk.finish()
