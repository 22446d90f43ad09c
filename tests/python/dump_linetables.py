"""Dump every code object compiled from this interpreter's standard library
(recursively including nested code objects) with CPython's own answer for the
line of every instruction offset, for tests/unit/test_python_linetable.c.
Runs on 2.7 and 3.6+.  Usage: dump_linetables.py OUT

Ground truth: co_lines() on 3.10+, dis.findlinestarts() before (both are
CPython's own decoders; findlinestarts is PyCode_Addr2Line's rule).
Format (little-endian): b"EMBERLT1", u32 major, u32 minor, then per code
object: i32 firstlineno, u32 table length, table bytes, u32 bytecode length,
u32 nruns, nruns x (u32 start offset, i32 line; -1 = no line); a run lasts
until the next run's start (the last: to the bytecode length)."""
import dis
import os
import struct
import sys

# Third-party code is not the standard library; everything else is read,
# the test suites included (files that do not compile are passed over).
SKIP_DIRS = ("site-packages", "dist-packages")


def walk(co, out):
    out.append(co)
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out)


def runs_for(co):
    n = len(co.co_code)
    step = 1 if sys.version_info[0] == 2 else 2
    line_at = {}
    if hasattr(co, "co_lines"):
        for start, end, line in co.co_lines():
            for off in range(start, end, step):
                line_at[off] = -1 if line is None else line
    else:
        starts = list(dis.findlinestarts(co))
        k = 0
        cur = co.co_firstlineno
        for off in range(0, n, step):
            while k < len(starts) and starts[k][0] <= off:
                cur = starts[k][1]
                k += 1
            line_at[off] = cur
    runs = []
    for off in range(0, n, step):
        line = line_at.get(off, -1)
        if not runs or runs[-1][1] != line:
            runs.append((off, line))
    return n, runs


def table_of(co):
    if sys.version_info >= (3, 10):
        return co.co_linetable
    return co.co_lnotab


def main():
    out = open(sys.argv[1] + ".tmp", "wb")
    out.write(b"EMBERLT1" + struct.pack("<II", sys.version_info[0], sys.version_info[1]))
    root = os.path.dirname(os.__file__)
    files = codes = 0
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(d, name)
            try:
                with open(path, "rb") as f:
                    top = compile(f.read(), path, "exec")
            except Exception:
                continue   # files for other platforms/versions, bad encodings
            files += 1
            cos = []
            walk(top, cos)
            for co in cos:
                t = table_of(co)
                n, runs = runs_for(co)
                out.write(struct.pack("<iI", co.co_firstlineno, len(t)))
                out.write(t)
                out.write(struct.pack("<II", n, len(runs)))
                out.write(b"".join(struct.pack("<Ii", s, l) for s, l in runs))
                codes += 1
    out.close()
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    sys.stdout.write("%d files, %d code objects\n" % (files, codes))


main()
