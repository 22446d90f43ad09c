"""Known truth for native stacks cut off at the root: rec() recurses DEPTH
times through map() (a C call between every two Python frames: an eval-loop
activation and ~10 native frames per level), then compresses with zlib until
SECONDS have passed.  At depth 50 the native stack is past a 32 KB stack copy
or ember's 512-frame cap, so its root side is missing; the Python stack must still be whole:
<module>, then DEPTH + 1 rec frames, over deflate.  Python 2.7 and 3.x.
usage: deep_native.py DEPTH SECONDS"""
import sys
import time
import zlib

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)

DATA = bytes(bytearray(range(256))) * 4000


def rec(n):
    if n == 0:
        while clock() < DEADLINE:
            zlib.compress(DATA, 6)
        return 0
    return list(map(rec, [n - 1]))[0] + 1


DEPTH = int(sys.argv[1])
DEADLINE = clock() + float(sys.argv[2])
sys.setrecursionlimit(10000)
rec(DEPTH)
