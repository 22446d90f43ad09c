"""Known truth for merged stacks, one phase after another, each PHASE CPU
seconds of the main thread (Python 3.3+):
  chain  a_top burns 0-2 ms itself, then calls b_mid, which burns 0-2 ms
         and calls c_leaf, which burns 0-4 ms (uniformly drawn, so that no
         sampling period falls in step with the calls): a_top 25%, b_mid
         25%, c_leaf 50% of the phase, always nested a_top > b_mid > c_leaf
  zlib   compress_step -> zlib.compress: deflate under compress_step
  sort   sort_caller -> sorted(key=slow_key): C calling back into Python
  gen    gen_consumer -> sum() -> the generator gen_values
Meanwhile a thread named "zworker" runs zworker_loop -> zlib.decompress
(inflate) until the phases are done.  The main thread calls zlib.compress
nowhere else.
usage: known_shares.py PHASE"""
import random
import sys
import threading
import time
import zlib

PHASE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
clock = time.thread_time
rng = random.Random(1)


def burn(seconds):
    end = clock() + seconds
    x = 0
    while clock() < end:
        for i in range(300):
            x += i
    return x


def c_leaf():
    return burn(rng.uniform(0, 0.004))


def b_mid():
    burn(rng.uniform(0, 0.002))
    return c_leaf()


def a_top():
    burn(rng.uniform(0, 0.002))
    return b_mid()


DATA = bytes(range(256)) * 4000


def compress_step():
    return zlib.compress(DATA, 9)


def slow_key(v):
    x = 0
    for i in range(200):
        x += i * v
    return -x


def sort_caller():
    return sorted(range(300), key=slow_key)


def gen_values(n):
    for _ in range(n):
        x = 0
        for i in range(2000):
            x += i
        yield x


def gen_consumer():
    return sum(gen_values(50))


def zworker_loop(stop):
    packed = zlib.compress(DATA * 4, 1)
    while not stop.is_set():
        zlib.decompress(packed)


def phase(fn):
    end = clock() + PHASE
    while clock() < end:
        fn()


def main():
    stop = threading.Event()
    worker = threading.Thread(target=zworker_loop, args=(stop,), name="zworker")
    worker.start()
    phase(a_top)
    phase(compress_step)
    phase(sort_caller)
    phase(gen_consumer)
    stop.set()
    worker.join()


main()
