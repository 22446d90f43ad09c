"""Short-lived code objects, one after another: each round compiles a new
function gen_N (its file named "<gen N>"), burns LIFE_MS in it, and drops
it, so its code object is freed and its memory reused by the next one (the
allocator puts the name, file name and line table of the one after next at
the same addresses too).  ember drains its rings on a timer; only the
copier's wakeup at a code object it has not seen lets ember read gen_N's
names before they are freed.

Odd functions have a longer name (gen_N____________): two functions in a
row never have their name at the same address.

With "replace" as the fourth argument (3.8+) each function is instead a
copy of one code object (base, below) under a new name of the same length,
code.replace(co_name="gen_1001"): it shares its file name, line table and
bytecode with every other, and its name and header land where a freed
predecessor's were.  Every pointer in the new header then equals an old
one's: 3.12+ numbers each code object (co_version); before, only the
name's contents tell them apart, by its hash, which CPython computes when
it interns the name -- as the compiler does with every name, and as
"replace-interned" does here.  A name never hashed (plain "replace" on
3.8-3.11) leaves them indistinguishable: a known gap.

usage: fresh_code.py SECONDS LIFE_MS COUNT_FILE [replace|replace-interned]
       (any CPython, 2.7 included; replace: 3.8+)
Writes the number of functions it ran to COUNT_FILE."""
import sys
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def base(until):
    x = 0
    while clock() < until:
        x += 1
    return x


def main_replace(seconds, life, interned):
    end = clock() + seconds
    code = base.__code__
    i = 1000
    while clock() < end:
        name = "gen_%d" % i
        if interned:
            name = sys.intern(name)
        fields = {"co_name": name}
        if sys.version_info >= (3, 11):
            fields["co_qualname"] = name
        f = type(base)(code.replace(**fields), globals())
        f(clock() + life)
        i += 1
    return i - 1000

SRC = """def gen_%s(until):
    x = 0
    while clock() < until:
        x += 1
    return x
"""


def main(seconds, life):
    end = clock() + seconds
    i = 0
    while clock() < end:
        names = {}
        name = "%d%s" % (i, "_" * 12 if i % 2 else "")
        exec(compile(SRC % name, "<gen %d>" % i, "exec"), {"clock": clock}, names)
        names["gen_" + name](clock() + life)
        i += 1
    return i


mode = sys.argv[4] if len(sys.argv) > 4 else ""
if mode.startswith("replace"):
    n = main_replace(float(sys.argv[1]), float(sys.argv[2]) / 1000.0, mode == "replace-interned")
else:
    n = main(float(sys.argv[1]), float(sys.argv[2]) / 1000.0)
with open(sys.argv[3], "w") as f:
    f.write("%d\n" % n)
