"""fake_python: a native program that looks like CPython 3.11 (the symbols
ember finds a runtime and its eval loop by, run as `python3.11`) but holds
garbage where the interpreter state would be: main ->
_PyEval_EvalFrameDefault -> burn_function.  Every name in it is "the
interpreter's own" by its module's name, so a merge that hides the
interpreter behind the Python frames it read would leave nothing.

- ember takes it for Python 3.11 (else this test checks nothing: it fails);
- exit 0; >= 95% of the samples keep their native stack from main to
  burn_function, the eval-loop activation between them marked
  [python frames uncertain]; no stack is that mark alone, or starts with it;
- the summary says in one line that the interpreter state could not be
  read.

Then the same program claiming releases ember cannot verify: 3.16 (a minor
version whose _Py_DebugOffsets layout is unknown: refused by name, with the
versions that are supported) and 3.15 and 3.14 (the debug offsets' cookie
and version right, the struct garbage: refused, saying why).  Each keeps
its native stack whole and is not called "not a Python process"."""
import os
import shutil
import emberlib as E

chk = E.Checker("e2e.fake_python")
d = E.tmpdir()
fake = os.path.join(d, "python3.11")
shutil.copy(E.target("fake_python"), fake)
os.chmod(fake, 0o755)
out = os.path.join(d, "fake.folded")
res = E.record(["-o", out], [fake, "1.0"])
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
chk.check("Python 3.11" in res.stderr, "ember takes the program for Python 3.11", res.stderr)
prof = E.load_profile(chk, out, res)
E.check_format(chk, prof)
MARK = "[python frames uncertain]"


def native_kept(f):
    return "main" in f and "burn_function" in f and f.index("main") < f.index("burn_function")


kept = prof.count(native_kept)
chk.check(prof.total > 0 and kept >= 0.95 * prof.total,
          "main;...;burn_function kept in >= 95%% of samples: %d of %d" % (kept, prof.total), prof.top())
lone = prof.count(lambda f: f[0] == MARK)
chk.check(lone == 0, "no stack starts with %s (%d samples)" % (MARK, lone), prof.top())
lines = [l for l in res.stderr_lines() if "interpreter state could not be read" in l]
chk.check(len(lines) == 1, "one summary line says the interpreter state could not be read (%d)" % len(lines),
          res.stderr)

for ver, why in (("3.16", "CPython 3.16.0 (%s): not supported (supported: 2.7, 3.6-3.15)"),
                 ("3.15", "CPython 3.15.0: cannot use _Py_DebugOffsets: implausible"),
                 ("3.14", "CPython 3.14.0: cannot use _Py_DebugOffsets: implausible")):
    exe = os.path.join(d, "python" + ver)
    shutil.copy(E.target("fake_python"), exe)
    os.chmod(exe, 0o755)
    out = os.path.join(d, "fake-%s.folded" % ver)
    res = E.record(["-o", out], [exe, "0.5", ver])
    chk.check(res.rc == 0, "%s: ember exits 0 (got %s)" % (ver, res.rc), res.describe())
    want = why % exe if "%s" in why else why
    chk.check("native profile only: " + want in res.stderr, "%s: refused, saying so in one line: %s" % (ver, want),
              res.stderr)
    chk.check("is not a Python process" not in res.stderr, "%s: not called 'not a Python process'" % ver)
    prof = E.load_profile(chk, out, res)
    kept = prof.count(native_kept)
    chk.check(prof.total > 0 and kept >= 0.95 * prof.total,
              "%s: main;...;burn_function kept in >= 95%% of samples: %d of %d" % (ver, kept, prof.total),
              prof.top())
chk.finish()
