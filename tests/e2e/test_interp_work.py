"""interp_work: the interpreter's own C code under the Python line that ran
it, on one interpreter: only its call machinery is hidden (python-stacks/
README.md, "Which native frames a Python stack shows").

usage: test_interp_work.py --ember E --targets T --python EXE [--strip]
tests/python/interp_work.py (its docstring has the stages) runs for 3 s
under `ember record`.  For each stage, of its samples (at its marked line):
- collect_stage: >= 80% show the cyclic collector by name (gc_collect*,
  collect*) under the line;
- unpickle_stage: >= 80% show the C unpickler (_pickle's or cPickle's load*);
- parse_stage: >= 80% show the compiler (builtin_compile, the parser, the
  AST builder);
- sort_stage: >= 80% show list.sort's C (list_sort*, listsort).
With --strip, EXE is a pyenv build whose libpython is copied and stripped
of every symbol but the dynamic ones (a stripped build, as python-build-
standalone's stripped archives and distributions without their -dbg
packages are): the interpreter's work cannot be named then, and the check
is that it is not hidden: >= 80% of each stage's samples have native frames
under its line.  Skipped (77) when EXE is missing, or --strip finds no
shared libpython to strip.
"""
import os
import re
import shutil
import subprocess
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "python", "interp_work.py")
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")
strip = "--strip" in E.sys.argv
if strip:
    E.sys.argv.remove("--strip")
PY = E.python_arg()
E.require_interpreter(PY)
env = dict(os.environ)
if strip:
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(PY)))
    libs = [f for f in os.listdir(os.path.join(prefix, "lib")) if re.match(r"libpython\d+\.\d+\.so\.1\.0$", f)]
    if not libs:
        E.skip("%s has no shared libpython to strip" % PY)
    d = E.tmpdir()
    shutil.copy(os.path.join(prefix, "lib", libs[0]), os.path.join(d, libs[0]))
    subprocess.check_call(["strip", "--strip-all", os.path.join(d, libs[0])])
    exe = os.path.join(d, "python")
    shutil.copy(os.path.realpath(PY), exe)
    env.update(LD_LIBRARY_PATH=d, PYTHONHOME=prefix)
    PY = exe
LINES = E.marked_lines(SCRIPT)
WORK = {
    "collect": re.compile(r"^(gc_collect|collect\b|collect_generations|collect_with_callback|gc_collect_main)"),
    "unpickle": re.compile(r"^(_?load|_pickle_loads|cpickle_loads|Unpickler_load|load_\w+)"),
    "parse": re.compile(r"^(builtin_compile|Py_Compile|_PyPegen|PyParser_|PyAST_|ast2obj|_PyParser_|PyRun_String)"),
    "sort": re.compile(r"^(list_sort|listsort|list\.sort|unsafe_\w+_compare)"),
}

chk = E.Checker("e2e.interp_work[%s%s]" % (PY, ", stripped" if strip else ""))
out = os.path.join(E.tmpdir(), "work.folded")
res = E.record(["-o", out], [PY, SCRIPT, "3"], env=env, timeout=120)
if res.rc == 77:
    E.skip("sampling not permitted here")
chk.check(res.rc == 0, "ember exits 0", res.describe())
prof = E.load_profile(chk, out, res)
for stage, line in sorted(LINES.items()):
    want = "%s_stage (interp_work.py:%d)" % (stage, line)
    rows = [(f, c) for f, c in prof.stacks if want in f]
    total = sum(c for _, c in rows)

    def below(frames):
        return frames[frames.index(want) + 1:]

    if strip:
        shown = sum(c for f, c in rows if any(not PYFRAME.match(x) for x in below(f)))
        what = "native frames (the interpreter's, unnamed)"
    else:
        shown = sum(c for f, c in rows if any(WORK[stage].match(x) for x in below(f)))
        what = "the interpreter's %s code by name" % stage
    chk.check(total >= 15 and shown >= 0.8 * total, "%s: %d of its %d samples show %s under it (>= 80%%)" %
              (want, shown, total, what), prof.top())
chk.finish()
