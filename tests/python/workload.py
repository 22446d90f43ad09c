# -*- coding: utf-8 -*-
"""Known-truth Python workload for ember's merge tests (Python 2.7 and 3.6+).

usage: workload.py PHASE_SECONDS [ready-file]
The main thread runs phases one after another, each burning CPU in a
function only that phase uses; a named thread burns thread_burn meanwhile.
Lines marked LEAF-* are where the busy loops spend their time.
"""
from __future__ import print_function
import sys
import threading
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)

PHASE = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6


def spin(seconds):
    deadline = clock() + seconds
    x = 0
    while clock() < deadline:
        for i in range(2000):
            x += i * i  # LEAF-SPIN
    return x


class Model(object):
    def forward(self, seconds):
        return spin(seconds)


def nested_outer():
    return Model().forward(PHASE)


def rec(depth, seconds):
    if depth > 0:
        return rec(depth - 1, seconds) + 1
    return spin(seconds)


def slow_key(v):
    x = 0
    for i in range(300):
        x += i * v  # LEAF-KEY
    return -x


def sort_caller():
    deadline = clock() + PHASE
    n = 0
    while clock() < deadline:
        n += len(sorted(range(200), key=slow_key))
    return n


def map_caller():
    deadline = clock() + PHASE
    n = 0
    while clock() < deadline:
        n += sum(map(slow_key, range(200)))
    return n


def gen_values():
    deadline = clock() + PHASE
    while clock() < deadline:
        x = 0
        for i in range(2000):
            x += i  # LEAF-GEN
        yield x


def gen_consumer():
    return sum(gen_values())


def thread_burn(stop):
    x = 0
    while not stop.is_set():
        for i in range(2000):
            x += i  # LEAF-THREAD
    return x


def main():
    stop = threading.Event()
    worker = threading.Thread(target=thread_burn, args=(stop,), name="burner")
    worker.start()
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("ready\n")
    nested_outer()
    rec(25, PHASE)
    sort_caller()
    map_caller()
    gen_consumer()
    if sys.version_info >= (3, 6):
        import workload_py3
        workload_py3.run(PHASE)
    stop.set()
    worker.join()


if __name__ == "__main__":
    main()
