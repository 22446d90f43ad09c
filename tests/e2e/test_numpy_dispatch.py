"""numpy_dispatch: merged stacks through NumPy's dispatch, under the Python
functions that called it.

usage: test_numpy_dispatch.py --ember E --targets T --python EXE
(registered for the bigger sid root: EXE runs its python3.14 with NumPy 2.4
and the reference BLAS, docs/sid.md).  tests/python/numpy_dispatch.py (its
docstring has the steps) runs for 3 s under `ember record -F 499`, on one
thread (OPENBLAS_NUM_THREADS and OMP_NUM_THREADS 1; no inherited NPY_*,
OPENBLAS_*, GOTO*, OMP_*: NPY_DISABLE_CPU_FEATURES would change which
kernels NumPy dispatches to).  Debian strips NumPy's extensions: most of
NumPy's own functions are [_multiarray_umath...+0x...]; the kernels named
are the ones with an exported symbol.  Checked:
- each step function has samples (>= 20; the callback's leaf >= 10);
- each kernel's samples sit under the step that calls it, with NumPy's
  dispatch between the two (NumPy's own Python functions, where the call is
  one: np.sort, np.fft.fft; then [_multiarray_umath...] frames), the stack
  whole (>= 95%): dgemm_ (the BLAS, through cblas_dgemm) under matmul_step;
  pocketfft's frames ([_pocketfft...]) under fft_step; SVML's __svml_exp*
  under ufunc_step and x86-simd-sort's np::qsort_simd::QSort_* under
  sort_step when NumPy picked them for this CPU (else skipped, loudly);
- Python under NumPy's C under Python: callback_leaf's samples have
  callback_step, then NumPy's frames (the np.frompyfunc loop), then
  callback_leaf (>= 95%);
- every step's frame at the line it runs (>= 95% of its samples), and at most
  5% of all samples uncertain (the summary's count).
Skipped (77) when EXE cannot import numpy or sampling is not permitted.
"""
import os
import re
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "python", "numpy_dispatch.py")
PY = E.python_arg()
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")
LINES = E.marked_lines(SCRIPT)

env = {k: v for k, v in os.environ.items() if not k.startswith(("NPY_", "OPENBLAS_", "GOTO", "OMP_"))}
env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
blas, r = E.mapped_after(PY, "import sys, numpy; a = numpy.ones((64, 64)); a @ a; "
                         "print('python %d.%d' % sys.version_info[:2], 'numpy', numpy.__version__)", "blas", env=env)
if r.rc != 0:
    E.skip("numpy is not importable by %s: %s" % (PY, r.stderr.strip()[-200:]))
print("%s; BLAS: %s" % (r.stdout.strip(), ", ".join(blas) or "none mapped"), flush=True)

chk = E.Checker("e2e.numpy_dispatch (%s)" % PY)
d = E.tmpdir()
out = os.path.join(d, "numpy.folded")
res = E.record(["-F", "499", "-o", out], [PY, SCRIPT, "3"], env=env, timeout=120)
if res.rc == 77:
    E.skip("sampling not permitted here")
chk.check(res.rc == 0, "ember exits 0", res.describe())
prof = E.load_profile(chk, out, res)


def python_frames(fr):
    return [(i, PYFRAME.match(f)) for i, f in enumerate(fr) if PYFRAME.match(f)]


def step_of(fr):
    """The innermost *_step frame of a stack: (index, name, line), or None."""
    for i, m in reversed(python_frames(fr)):
        if m.group(1).endswith("_step"):
            return i, m.group(1), int(m.group(3))
    return None


def whole(fr):
    return "[python frames uncertain]" not in fr and not fr[0].startswith("[truncated]") and \
        not any(f in ("[unknown]", "[jit]") for f in fr)


# Each step has samples, at the line it runs.
steps = {}
for fr, c in prof.stacks:
    s = step_of(fr)
    if s:
        steps.setdefault(s[1], [0, 0])
        steps[s[1]][0] += c
        steps[s[1]][1] += c if s[2] == LINES[s[1][:-len("_step")]] else 0
for name in ("ufunc_step", "sort_step", "fft_step", "matmul_step", "callback_step"):
    tot, at_line = steps.get(name, (0, 0))
    chk.check(tot >= 20 and at_line >= 0.95 * tot, "%s: %d samples, %d at its line %d" %
              (name, tot, at_line, LINES[name[:-len("_step")]]), prof.top(20))

# Each kernel under its step, through NumPy's dispatch.
KERNELS = (
    ("dgemm (the BLAS)", lambda f: "dgemm" in f.lower(), "matmul_step", True),
    ("pocketfft", lambda f: f.startswith("[_pocketfft"), "fft_step", True),
    ("SVML's exp", lambda f: f.startswith("__svml_exp"), "ufunc_step", False),
    ("x86-simd-sort", lambda f: "np::qsort_simd::" in f, "sort_step", False),
)
def through_dispatch(between, numpy_py):
    """The frames between a step and its kernel: NumPy's Python functions
    only (np.sort, np.fft.fft are Python), then NumPy's C dispatch."""
    py = python_frames(between)
    numpy_py.update(m.group(1) + " (" + m.group(2) + ")" for _, m in py)
    tail = between[py[-1][0] + 1:] if py else between
    return all("numpy/" in m.group(2) for _, m in py) and any(f.startswith("[_multiarray_umath") for f in tail)


for what, pred, step, required in KERNELS:
    good = tot = 0
    names, numpy_py = set(), set()
    for fr, c in prof.stacks:
        k = [i for i, f in enumerate(fr) if pred(f)]
        if not k:
            continue
        tot += c
        names.add(re.sub(r"\+0x[0-9a-f]+\]$", "]", fr[k[-1]]))
        s = step_of(fr[:k[0]])
        good += c if s and s[1] == step and whole(fr) and through_dispatch(fr[s[0] + 1:k[0]], numpy_py) else 0
    if tot == 0 and not required:
        print("SKIP (part): no %s frames: NumPy did not dispatch to it on this CPU (%s under %s not checked)" %
              (what, what, step), flush=True)
        continue
    chk.check(tot >= 20 and good >= 0.95 * tot, "%s (%s): under %s through NumPy's dispatch (%s), whole: "
              "%d of %d" % (what, ", ".join(sorted(names))[:160], step,
                            "; ".join(sorted(numpy_py)) or "C only", good, tot), prof.top(20))

# Python under NumPy's C under Python.
good = tot = 0
for fr, c in prof.stacks:
    if not PYFRAME.match(fr[-1]) or not fr[-1].startswith("callback_leaf "):
        continue
    tot += c
    py = python_frames(fr)
    if len(py) >= 2 and py[-2][1].group(1) == "callback_step":
        between = fr[py[-2][0] + 1:py[-1][0]]
        good += c if between and all(f.startswith("[_multiarray_umath") for f in between) else 0
chk.check(tot >= 10 and good >= 0.95 * tot, "callback_leaf under NumPy's frompyfunc loop under callback_step: "
          "%d of %d" % (good, tot), prof.top(20))

m = re.search(r"(\d+) of (\d+) samples \(([\d.]+)%\) disagreed", res.stderr)
chk.check(m is None or float(m.group(3)) <= 5.0, "at most 5%% of the samples uncertain (%s)" %
          (m.group(0) if m else "none reported"), res.stderr)
chk.finish()
