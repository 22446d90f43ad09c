"""numpy/OpenBLAS: /usr/bin/python3 doing 1000x1000 float64 matmuls for ~2 s
with OPENBLAS_NUM_THREADS=2, recorded with --threads.
- more than one thread has samples;
- every thread root is `NAME (TID)`: a Python thread's threading name
  ("MainThread"), any other thread's comm (the OpenBLAS workers); the
  script prints /proc/self/task/*/comm and threading.enumerate() before
  it exits;
- OpenBLAS frames (a name containing gemm, or module libopenblas) are present,
  and a thread other than the main thread spent >= 5 samples in them.
Skips (77) when /usr/bin/python3 cannot import numpy."""
import os
import subprocess
import emberlib as E

if not os.access(E.PYTHON, os.X_OK):
    E.skip("%s is missing" % E.PYTHON)
probe = subprocess.run([E.PYTHON, "-c", "import numpy"], capture_output=True, text=True)
if probe.returncode != 0:
    last = (probe.stderr.strip().splitlines() or ["?"])[-1]
    E.skip("numpy is not importable by %s (%s); install python3-numpy" % (E.PYTHON, last))

SCRIPT = r'''
import os, sys, threading, time
import numpy as np
rng = np.random.default_rng(1)
a = rng.random((1000, 1000))
b = rng.random((1000, 1000))
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end or n < 2:
    c = np.dot(a, b)
    n += 1
print("dots=%d" % n)
for tid in sorted(os.listdir("/proc/self/task"), key=int):
    with open("/proc/self/task/%s/comm" % tid) as f:
        print("thread=%s:%s" % (tid, f.read().strip()))
for t in threading.enumerate():
    print("pythread=%d:%s" % (t.native_id, t.name))
print("pid=%d" % os.getpid())
'''

chk = E.Checker("e2e.numpy")
d = E.tmpdir()
script = os.path.join(d, "matmul.py")
with open(script, "w") as f:
    f.write(SCRIPT)
out = os.path.join(d, "numpy.folded")
env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
res = E.record(["--threads", "-o", out], [E.PYTHON, script, "2.0"], env=env, timeout=90)
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, out, res)
E.check_format(chk, prof)

comms, pynames = {}, {}
for line in res.stdout.splitlines():
    for prefix, names in (("thread=", comms), ("pythread=", pynames)):
        if line.startswith(prefix):
            tid, _, name = line[len(prefix):].partition(":")
            names[int(tid)] = name
pid = E.stdout_value(res, "pid", int)
chk.check(len(comms) >= 2 and pid, "script saw >= 2 threads (OpenBLAS pool): %s" % comms, res.stdout)

roots = prof.by_root()
per_thread = {r: sum(c for _, c in v) for r, v in roots.items()}
listing = "\n".join("%6d  %s" % (c, r) for r, c in sorted(per_thread.items()))
parsed = {r: E.thread_root(r) for r in roots}
chk.check(all(parsed.values()), "every root is `name (tid)`", listing)
sampled = [r for r, c in per_thread.items() if c > 0 and parsed[r]]
chk.check(len(sampled) >= 2, "more than one thread has samples (%d)" % len(sampled), listing)
# A Python thread (here the main thread, busy in Python the whole run) is
# named as threading names it; a thread Python does not know, by its comm.
wrong = [r for r in sampled if parsed[r][1] in comms and parsed[r][0] != pynames.get(parsed[r][1], comms[parsed[r][1]])]
known = [r for r in sampled if parsed[r][1] in comms]
chk.check(len(known) >= 2 and not wrong,
          "sampled threads are named by their Python name, else their comm (%d matched, wrong: %s)" %
          (len(known), wrong), listing + "\ncomms: %s\nPython names: %s" % (comms, pynames))
chk.check(pynames.get(pid) == "MainThread" and "MainThread (%d)" % pid in per_thread,
          "the main thread is `MainThread (%d)`" % pid, listing)
blas_names = [r for r in sampled if parsed[r][1] not in pynames and parsed[r][1] in comms]
chk.check(blas_names, "the OpenBLAS workers keep their comm: %s" % blas_names, listing)


def blas(fr):
    return "gemm" in fr.lower() or "libopenblas" in fr


nblas = prof.count(lambda f: any(map(blas, f)))
chk.check(nblas > 0, "OpenBLAS frames (gemm / libopenblas) present in %d samples" % nblas, prof.top())
workers = {}
for f, c in prof.stacks:
    p = E.thread_root(f[0])
    if p and p[1] != pid and any(map(blas, f)):
        workers[f[0]] = workers.get(f[0], 0) + c
chk.check(any(c >= 5 for c in workers.values()),
          "an OpenBLAS worker thread (not the main thread) has >= 5 samples in OpenBLAS: %s" % workers, listing)
chk.finish()
