"""Known truth with two threads running at once: one compresses (deflate
under compress_worker), the other decompresses (inflate under
decompress_worker); zlib lets go of the GIL inside both, so on two CPUs the
threads' samples interleave, and a sample's record of frames copied at the
sample often arrives while ember reads the other thread's sample.
Python 2.7 and 3.x.  usage: zlib_threads.py SECONDS"""
import random
import sys
import threading
import time
import zlib

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)

rng = random.Random(11)
WORDS = ["alpha", "beta", "gamma", "delta", "sample", "frame", "stack", "ember", "kernel", "thread"]
TEXT = " ".join(rng.choice(WORDS) for _ in range(60000)).encode("ascii")
PACKED = zlib.compress(TEXT * 8, 6)


def compress_worker(deadline):
    while clock() < deadline:
        zlib.compress(TEXT, 6)


def decompress_worker(deadline):
    while clock() < deadline:
        zlib.decompress(PACKED)


def main(seconds):
    deadline = clock() + seconds
    workers = [threading.Thread(target=compress_worker, args=(deadline,)),
               threading.Thread(target=decompress_worker, args=(deadline,))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
