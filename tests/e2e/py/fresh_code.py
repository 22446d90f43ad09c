"""Short-lived code objects, one after another: each round compiles a new
function gen_N (its file named "<gen N>"), burns LIFE_MS in it, and drops
it, so its code object is freed and its memory reused by the next one (the
allocator puts the name, file name and line table of the one after next at
the same addresses too).  ember drains its rings on a timer; only the
copier's wakeup at a code object it has not seen lets ember read gen_N's
names before they are freed.

Odd functions have a longer name (gen_N____________): two functions in a
row never have their name at the same address.  When they do (all the same
length), every pointer in the header of a new code object can equal its
predecessor's, and ember cannot tell them apart: a known gap
(python-stacks/README.md), not what this target tests.

usage: fresh_code.py SECONDS LIFE_MS COUNT_FILE   (any CPython, 2.7 included)
Writes the number of functions it ran to COUNT_FILE."""
import sys
import time

SRC = """def gen_%s(until):
    x = 0
    while time.time() < until:
        x += 1
    return x
"""


def main(seconds, life):
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        names = {}
        name = "%d%s" % (i, "_" * 12 if i % 2 else "")
        exec(compile(SRC % name, "<gen %d>" % i, "exec"), {"time": time}, names)
        names["gen_" + name](time.time() + life)
        i += 1
    return i


n = main(float(sys.argv[1]), float(sys.argv[2]) / 1000.0)
with open(sys.argv[3], "w") as f:
    f.write("%d\n" % n)
