"""jit: `ember record -- jit MODE 1.5` (tests/targets/jit.c): a kernel
generated at run time in anonymous executable memory, without CFI, where
the time goes, called from main;outer_jit.

- map: /tmp/perf-PID.map names it: main;outer_jit;jit_spin_kernel in >= 99%
  of the kernel's samples; the map, written by the program itself (no
  oneDNN), is left where it is;
- nomap: the same chain with the leaf [jit] (never a bare [unknown]);
- named: no map, the mapping named "ember-test-jit": [anon:ember-test-jit]
  (kernel 5.17+ with CONFIG_ANON_VMA_NAME, else [jit]);
- symlink, foreign: the map is a symbolic link, or belongs to another user:
  not read (the leaf stays [jit]), named in the summary, not deleted.
- hostile: the map is 64 MiB of a line that never ends, read again at each
  lookup that misses: the leaf is [jit], the summary says a line was past
  ember's bounds, and ember and the program together use less than 1.5 s of
  CPU beyond the program's 1.5 s (a reader that buffered the line and scanned
  it again at each read took minutes).
- jitdump: no map; /tmp/jit-PID.dump loads the kernel, then moves another
  piece of code 200,000 times: main;outer_jit;jit_spin_kernel in >= 99% of
  the kernel's samples, within the same CPU bound as hostile (a reader that
  searched for each move's code ran for hours and ignored SIGTERM).

And CPython's perf trampolines (pyenv's 3.12 and 3.13, `-X perf`): JIT code
without CFI between every two eval-loop activations, named py::... in a perf
map the interpreter writes itself.  tests/python/perf_trampolines.py:
top;mid;leaf and top;mid;comp;<zlib> in >= 95% of the samples, <= 3%
uncertain, no py:: frame shown (interpreter internals) unless
--native-unfiltered, and the map -- asked for by the user -- left in place.
"""
import glob
import os
import platform
import re
import resource
import emberlib as E

if platform.machine() != "x86_64":
    E.skip("jit's kernel is x86_64 machine code")
chk = E.Checker("e2e.jit")
d = E.tmpdir()
CHAIN = ("_start", "__libc_start_main", "__libc_start_call_main", "main", "outer_jit")


def run(mode):
    out = os.path.join(d, mode + ".folded")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = E.record(["-o", out], [E.target("jit"), mode, "1.5"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU of ember and the program together: unlike wall time, not stretched
    # by a loaded machine
    res.cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    chk.check(res.rc == 0, "%s: ember exits 0" % mode, res.describe())
    return res, E.load_profile(chk, out, res), E.stdout_value(res, "pid", int)


def leaves_under_chain(prof, leaf):
    hot = prof.count(lambda f: f[-1] in (leaf, "[jit]", "[unknown]", "jit_spin_kernel") or
                     f[-1].startswith("[anon:"))
    good = prof.count(lambda f: f[:-1] == CHAIN and f[-1] == leaf)
    return good, hot


def cleanup(pid):
    for p in ("/tmp/perf-%d.map" % pid, "/tmp/ember-jit-real-%d.map" % pid, "/tmp/jit-%d.dump" % pid):
        try:
            os.unlink(p)
        except OSError:
            pass


res, prof, pid = run("map")
good, hot = leaves_under_chain(prof, "jit_spin_kernel")
chk.check(hot >= 50 and good >= 0.99 * hot, "map: %s;jit_spin_kernel in >= 99%% of the kernel's samples: "
          "%d of %d" % (";".join(CHAIN), good, hot), prof.top())
chk.check("JIT code named from 1 perf map" in res.stderr, "map: the summary says a perf map named JIT code",
          res.stderr)
chk.check(pid and os.path.exists("/tmp/perf-%d.map" % pid),
          "map: the program's own perf map is not ember's to delete (no oneDNN in it)")
if pid:
    cleanup(pid)

# A hostile file: the kernel's leaf as the file allows, and ember and the
# program together within 1.5 s of CPU beyond the program's own 1.5 s.
for mode, leaf in (("hostile", "[jit]"), ("jitdump", "jit_spin_kernel")):
    res, prof, pid = run(mode)
    good, hot = leaves_under_chain(prof, leaf)
    chk.check(hot >= 50 and good >= 0.99 * hot, "%s: %s;%s in >= 99%% of the kernel's samples: %d of %d"
              % (mode, ";".join(CHAIN), leaf, good, hot), prof.top())
    chk.check(res.cpu < 1.5 + 1.5, "%s: the run costs about the program's 1.5 s of CPU (%.1f s with ember's)"
              % (mode, res.cpu), res.describe())
    if mode == "hostile":
        chk.check("1 function not named" in res.stderr, "hostile: the summary says a line was past ember's "
                  "bounds", res.stderr)
    if pid:
        cleanup(pid)

res, prof, pid = run("nomap")
good, hot = leaves_under_chain(prof, "[jit]")
chk.check(hot >= 50 and good >= 0.99 * hot, "nomap: %s;[jit] in >= 99%% of the kernel's samples: %d of %d"
          % (";".join(CHAIN), good, hot), prof.top())
chk.check("[unknown]" not in prof.frames(), "nomap: no [unknown] frame", prof.top())

res, prof, pid = run("named")
good_named, hot = leaves_under_chain(prof, "[anon:ember-test-jit]")
good_plain, _ = leaves_under_chain(prof, "[jit]")
if E.stdout_value(res, "anon_name", str) == "ok":
    chk.check(hot >= 50 and good_named + good_plain >= 0.99 * hot and good_named >= 0.9 * hot,
              "named: %s;[anon:ember-test-jit] in >= 90%% of the kernel's samples (%d), [jit] in the rest "
              "(%d, before ember saw the name), of %d" % (";".join(CHAIN), good_named, good_plain, hot),
              prof.top())
else:
    print("NOTE: this kernel cannot name anonymous mappings (CONFIG_ANON_VMA_NAME): only [jit] checked",
          flush=True)
    chk.check(hot >= 50 and good_plain >= 0.99 * hot, "named, unnamed by the kernel: [jit] in >= 99%% of "
              "the kernel's samples: %d of %d" % (good_plain, hot), prof.top())

for mode in ("symlink", "foreign"):
    res, prof, pid = run(mode)
    good, hot = leaves_under_chain(prof, "[jit]")
    chk.check(hot >= 50 and good >= 0.99 * hot and "jit_spin_kernel" not in prof.frames(),
              "%s: the map is not read: %s;[jit] in >= 99%% of the kernel's samples: %d of %d"
              % (mode, ";".join(CHAIN), good, hot), prof.top())
    chk.check(pid and "not read, as not a regular file of the target's user: /tmp/perf-%d.map" % pid in res.stderr,
              "%s: the summary names the file it did not read" % mode, res.stderr)
    chk.check(pid and os.path.lexists("/tmp/perf-%d.map" % pid), "%s: and leaves it alone" % mode)
    if pid:
        cleanup(pid)
HERE = os.path.dirname(os.path.abspath(__file__))
PYENV = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
for minor in ("3.12", "3.13"):
    found = sorted(p for p in glob.glob(os.path.join(PYENV, "versions", minor + ".*", "bin", "python"))
                   if re.match(r"^\d+\.\d+\.\d+$", p.split(os.sep)[-3]))
    if not found:
        print("SKIP (part): no pyenv Python %s under %s: perf trampolines not checked on it" % (minor, PYENV),
              flush=True)
        continue
    py = found[-1]
    script = os.path.join(HERE, "..", "python", "perf_trampolines.py")
    out = os.path.join(d, "tramp-%s.folded" % minor)
    res, _ = E.record_unstalled(["-o", out], [py, "-X", "perf", script, "1.5"], timeout=60)
    prof = E.load_profile(chk, out, res)
    names = lambda f: [x.split(" (")[0] for x in f if x.endswith(".py)") or ".py:" in x]
    good = prof.count(lambda f: names(f)[-3:] in (["top", "mid", "leaf"], ["top", "mid", "comp"]))
    chk.check(res.rc == 0 and prof.total >= 50 and good >= 0.95 * prof.total,
              "%s -X perf: top;mid;leaf or top;mid;comp in >= 95%% of the samples: %d of %d" %
              (minor, good, prof.total), prof.top())
    m = re.search(r"(\d+) of (\d+) samples \(([\d.]+)%\) disagreed", res.stderr)
    chk.check(m is not None and float(m.group(3)) <= 3.0, "%s -X perf: at most 3%% uncertain (%s)" %
              (minor, m.group(0) if m else "no line"), res.stderr)
    # The trampolines are the interpreter's own frames: hidden wherever Python
    # frames stand for them.  A sample whose read found no Python frames (a
    # thread's first sample read after the target exited) keeps its native
    # stack whole, trampolines and all -- their names are then the only
    # Python names it has; those must stay rare.
    tramp = [(f, c) for f, c in prof.stacks if any(x.startswith("py::") for x in f)]
    shown = "\n".join("%6d  %s" % (c, ";".join(f)) for f, c in tramp) + "\n" + res.stderr
    both = sum(c for f, c in tramp if names(f))
    chk.check(both == 0, "%s -X perf: the trampolines are hidden under the Python frames (%d samples show both)"
              % (minor, both), shown)
    alone = sum(c for f, c in tramp)
    chk.check(alone <= 0.03 * prof.total, "%s -X perf: samples without Python frames, trampolines shown: %d of %d "
              "(<= 3%%)" % (minor, alone, prof.total), shown)
    chk.check("JIT code named from" in res.stderr, "%s -X perf: the interpreter's perf map was read" % minor,
              res.stderr)
    pid = re.search(r"ember: pid (\d+): Python", res.stderr)
    chk.check(pid and os.path.exists("/tmp/perf-%s.map" % pid.group(1)),
              "%s -X perf: the map the user asked for is left in place" % minor)
    if pid:
        cleanup(int(pid.group(1)))
    out = os.path.join(d, "tramp-%s-unfiltered.folded" % minor)
    res = E.record(["--native-unfiltered", "-o", out], [py, "-X", "perf", script, "0.5"], timeout=60)
    prof = E.load_profile(chk, out, res)
    chk.check(prof.count(lambda f: any(x.startswith("py::mid:") for x in f)) >= 0.5 * prof.total,
              "%s -X perf --native-unfiltered: the trampolines are shown (py::mid:...)" % minor, prof.top())
    pid = re.search(r"ember: pid (\d+): Python", res.stderr)
    if pid:
        cleanup(int(pid.group(1)))
chk.finish()
