"""Modules imported one after another, each one's code freed once imported:
every round writes fresh_mod_N.py (filler(N) >= 200 assignments, so that its line
table is longer than the 256 bytes the copier takes of every object, on
every version), imports it -- its module code burns LIFE_MS in a loop at
lines filler(N) + 4 and filler(N) + 5.  A module's code object lives
only while the module is imported: when ember reads the sample later than
that, it has only what the copier took at the sample, line table included.

The modules stay in sys.modules, as imported modules do, and with them
their file names (__file__).  Dropped too, every module's code object,
file name, line table and bytecode could land where an earlier one's were,
and up to 3.11 nothing ember compares would tell them apart (the name,
"<module>", is the same string; a file name is seldom hashed): a known gap
(python-stacks/README.md), not what this tests.  The filler's length
changes every other module all the same.

usage: fresh_modules.py SECONDS LIFE_MS DIR COUNT_FILE   (any CPython)
Writes the number of modules it imported to COUNT_FILE."""
import os
import sys
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)

sys.dont_write_bytecode = True
LOOP = """import time
until = time.time() + %f
x = 0
while time.time() < until:
    x += 1
"""


def filler(i):
    return 200 + 16 * (i // 2 % 3)


def main(seconds, life, where):
    sys.path.insert(0, where)
    end = clock() + seconds
    i = 0
    while clock() < end:
        name = "fresh_mod_%d" % i
        with open(os.path.join(where, name + ".py"), "w") as f:
            f.write("".join("v%d = %d\n" % (k, k) for k in range(filler(i))) + LOOP % life)
        __import__(name)
        i += 1
    return i


n = main(float(sys.argv[1]), float(sys.argv[2]) / 1000.0, sys.argv[3])
with open(sys.argv[4], "w") as f:
    f.write("%d\n" % n)
