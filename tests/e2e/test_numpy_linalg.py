"""numpy_linalg: NumPy's own test suite for numpy.linalg (pytest --pyargs
numpy.linalg), under `ember record` with OpenBLAS's pool on two threads
(OPENBLAS_NUM_THREADS=2, set here): thousands of small LAPACK and BLAS
calls, some through assembly kernels whose callers the unwinder may not
find.  Checked: the suite passes under ember; no stack has a native frame
before (rootward of) its Python frames -- a stack whose unwind stopped
short starts with [native stack incomplete], its Python frames before the
native ones they called (docs/pools.md, docs/cli.md) -- unless it is marked
[python frames uncertain] (at most 1% of the samples); no stack is rooted
at a bare native frame without a mark; pool threads' samples are under a
Python frame or marked [dispatcher unknown].
Skipped (77) when /usr/bin/python3 lacks NumPy or pytest, or sampling is not
permitted."""
import os
import re
import emberlib as E

PY = E.PYTHON
PYFRAME = re.compile(r"^(.*) \((.+?)(:\d+)?\)$")
probe = E.run([PY, "-c", "import numpy, pytest"], quiet=True)
if probe.rc != 0:
    E.skip("%s cannot import numpy and pytest (apt-get install python3-numpy python3-pytest): %s" %
           (PY, probe.stderr.strip()[-200:]))
chk = E.Checker("e2e.numpy_linalg")
d = E.tmpdir()
out = os.path.join(d, "linalg.folded")
env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "GOTO", "OMP_", "NPY_"))}
env.update(OPENBLAS_NUM_THREADS="2")
res = E.record(["-o", out], [PY, "-m", "pytest", "--pyargs", "numpy.linalg", "-q", "-p", "no:cacheprovider"],
               env=env, timeout=300, cwd=d)
if res.rc == 77:
    E.skip("sampling not permitted here")
chk.check(res.rc == 0, "the suite passes under ember (exit 0)", res.describe())
prof = E.load_profile(chk, out, res)


def is_mark(f):
    return f.startswith("[") and (f.endswith("]") and "+0x" not in f)


UNCERTAIN = "[python frames uncertain]"
above = []
admitted = []
bare = []
for frames, c in prof.stacks:
    python = [i for i, f in enumerate(frames) if PYFRAME.match(f) and not f.startswith("[")]
    real = [f for f in frames if not is_mark(f)]
    if python and real and not PYFRAME.match(real[0]):
        # A read whose frames the native stack has no activation for (the
        # thread was in C at the sample: the interpreter's start-up, say)
        # keeps them after the native frames, marked as uncertain.
        (admitted if UNCERTAIN in frames else above).append((frames, c))
    if not python and frames[0] not in ("_start", "clone3", "clone", "start_thread", "[dispatcher unknown]",
                                        "[native stack incomplete]", "[truncated]"):
        bare.append((frames, c))
total = prof.total
chk.check(total >= 300, "the suite took %d samples (>= 300)" % total, prof.top())
chk.check(not above, "no stack with a native frame before its Python frames (%d samples)" %
          sum(c for _, c in above), "\n".join("%d %s" % (c, ";".join(f)) for f, c in above[:8]))
n_admitted = sum(c for _, c in admitted)
chk.check(n_admitted <= max(2, total // 100),
          "at most 1%% of the samples have their Python frames after native ones, marked %s (%d)" %
          (UNCERTAIN, n_admitted), "\n".join("%d %s" % (c, ";".join(f)) for f, c in admitted[:8]))
chk.check(not bare, "no stack rooted at a bare native frame without a mark (%d samples)" % sum(c for _, c in bare),
          "\n".join("%d %s" % (c, ";".join(f)[:300]) for f, c in bare[:8]))
chk.finish()
