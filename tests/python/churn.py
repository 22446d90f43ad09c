"""Churn target for tests/unit/test_python_stacks.c (2.7 and 3.6+): threads
are created and destroyed continuously, each recursing to a random depth,
and the main thread's recursion depth changes all the time, so a reader
sees thread states and frames appear, change and vanish under it.
Writes READY_FILE (argv[1]) with "pid N" once running."""
import os
import random
import sys
import threading
import time


def deep(n):
    if n <= 0:
        x = 0
        for i in range(200):
            x += i
        return x
    return deep(n - 1) + 1


def worker(seed):
    r = random.Random(seed)
    end = time.time() + r.random() * 0.05
    while time.time() < end:
        deep(r.randint(0, 120))


def spawner():
    k = 0
    while True:
        ts = [threading.Thread(target=worker, args=(k + i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        k += 4


if __name__ == "__main__":
    sys.setrecursionlimit(5000)
    t = threading.Thread(target=spawner)
    t.daemon = True
    t.start()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("pid %d\n" % os.getpid())
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    r = random.Random(1)
    while True:
        deep(r.randint(0, 900))
