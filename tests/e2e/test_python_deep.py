"""python_deep: a Python stack deeper than ember keeps (1,024 frames).

usage: test_python_deep.py --ember E --targets T --python EXE
tests/python/deep_recursion.py recurses 50,000 frames deep (1,500 up to
3.10, whose every Python call also takes C stack) and burns CPU at the
bottom.  Every sample of it must keep the root side (`<module>` first, or
right after the `[truncated]` of a native stack cut off at the root, as it
is up to 3.10) and the leaf side (recurse ... leaf_spin), with one
`[truncated]` frame where the middle was left out, and the summary's
truncated count must equal the number of samples with a [truncated]
frame (each counted once, whichever part was cut).  With the frames
copied at the sample (default) and read after it (--no-copier; there up
to 5% may be marked [python frames uncertain], reads that raced the
thread; up to 3.10 also when copied, where the native stack is cut at
the root and matched less surely).  A sample less than 1,024 frames deep,
taken on the way down or up, has nothing to cut and is whole: at most 5%.
The stacks that fail are printed."""
import os
import re
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "python", "deep_recursion.py")
PYFRAME = re.compile(r"^(.*) \((.+):(\d+)\)$")

PY = E.python_arg()
if not os.access(PY, os.X_OK):
    E.skip("interpreter %s is not installed" % PY)
res0 = E.run([PY, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], quiet=True)
VER = tuple(int(x) for x in res0.stdout.strip().split("."))
DEPTH = 50000 if VER >= (3, 11) else 1500
chk = E.Checker("e2e.python_deep[%s]" % PY)
d = E.tmpdir()


def name(frame):
    m = PYFRAME.match(frame)
    return m.group(1) if m else frame


def well_cut(fr):
    """root side, one cut, leaf side: [truncated]? <module> recurse... [truncated]
    recurse... (leaf_spin ...; or recurse as the leaf, a sample of the way down)"""
    names = [name(f) for f in fr]
    if names and names[0] == "[truncated]" and VER < (3, 11):
        names = names[1:]   # the native stack's own cut, at the root
    if not names or names[0] != "<module>" or names.count("[truncated]") != 1:
        return False
    cut = names.index("[truncated]")
    root_side = names[1:cut]
    leaf_side = [name(f) for f in fr[len(fr) - len(names) + cut + 1:] if PYFRAME.match(f)]
    return (len(root_side) >= 100 and set(root_side) == {"recurse"} and len(leaf_side) >= 100
            and set(leaf_side[:-1]) == {"recurse"} and leaf_side[-1] in ("recurse", "leaf_spin"))


def whole(fr):
    """a sample of the way down or up, between 500 and 1,024 Python frames
    deep: nothing to cut, so no cut: <module> recurse... (leaf_spin)"""
    names = [name(f) for f in fr]
    if names and names[0] == "[truncated]" and VER < (3, 11):
        names = names[1:]
    py = [name(f) for f in fr if PYFRAME.match(f)]
    return (bool(names) and names[0] == "<module>" and "[truncated]" not in names and len(py) <= 1024
            and set(py[1:-1]) <= {"recurse"} and py[-1] in ("recurse", "leaf_spin"))


def show(stacks):
    """the first stacks given, their ends"""
    return "\n".join("%6d  %s ... %s" % (c, ";".join(f[:6]), ";".join(f[-8:])) for f, c in stacks[:3])


for label, opts in (("copied at the sample", []), ("read after it", ["--no-copier"])):
    out = os.path.join(d, "deep%d.folded" % len(opts))
    res = E.record(opts + ["-o", out], [PY, SCRIPT, str(DEPTH), "1.0"], timeout=90)
    chk.check(res.rc == 0, "%s: ember exits 0 (got %s)" % (label, res.rc), res.describe())
    prof = E.load_profile(chk, out, res)
    # the samples of the recursion (not of the start-up before it)
    deep = [(f, c) for f, c in prof.stacks if sum(1 for x in f if name(x) == "recurse") > 500]
    total = sum(c for _, c in deep)
    good = sum(c for f, c in deep if well_cut(f))
    nocut = sum(c for f, c in deep if whole(f))
    # Read after the sample, a read that raced the thread is marked so (and
    # may lose its innermost frames): at most 5% of them.
    # Up to 3.10 also copied at the sample: the last check below allows the
    # mark there (a native stack cut at the root is matched less surely).
    raced = sum(c for f, c in deep if not well_cut(f) and not whole(f) and "[python frames uncertain]" in f) \
        if opts or VER < (3, 11) else 0
    bad = [(f, c) for f, c in deep if not well_cut(f) and not whole(f)]
    chk.check(total >= 10, "%s: at least 10 samples in the recursion (%d)" % (label, total), prof.top(3))
    # (a sample taken on the way down or up, less than 1,024 deep, is whole)
    chk.check(good + nocut + raced == total and raced <= 0.05 * total and nocut <= 0.05 * total,
              "%s: every one is <module>;recurse...;[truncated];recurse...(;leaf_spin), but %d marked uncertain "
              "and %d whole (%d of %d)" % (label, raced, nocut, good, total), show(bad) or prof.top(3))
    s = E.parse_summary(res.stderr)
    marked = prof.count(lambda f: "[truncated]" in f)
    chk.check(s is not None and s["truncated"] == marked and marked >= total - nocut,
              "%s: the summary's truncated count is the samples with a [truncated] frame (%s, %d; %d cut)"
              % (label, s and s["truncated"], marked, total), res.stderr)
    chk.check("[python frames uncertain]" not in {x for f, _ in deep for x in f} or VER < (3, 11),
              "%s: none marked uncertain" % label, prof.top(3))
chk.finish()
