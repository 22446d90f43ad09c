"""Known truth for checking Python reads against the sample: two Python
functions, each spending its time in its own zlib routine (deflate under
compress_step, inflate under decompress_step), a few milliseconds a call,
called in turn from the same caller at the same depth -- the case where a
late read finds the other function.  Python 2.7 and 3.x.
usage: zlib_pair.py SECONDS"""
import random
import sys
import time
import zlib

rng = random.Random(7)
WORDS = ["alpha", "beta", "gamma", "delta", "sample", "frame", "stack", "ember", "kernel", "thread"]
TEXT = " ".join(rng.choice(WORDS) for _ in range(60000)).encode("ascii")
PACKED = zlib.compress(TEXT * 8, 6)


def compress_step():
    return zlib.compress(TEXT, 6)


def decompress_step():
    return zlib.decompress(PACKED)


# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def main(seconds):
    deadline = clock() + seconds
    while clock() < deadline:
        compress_step()
        decompress_step()


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
