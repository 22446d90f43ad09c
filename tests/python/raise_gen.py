"""Exceptions and generators: a Python stack that changes every microsecond.

usage: raise_gen.py [SECONDS]
catcher() calls thrower() 20,000 times, which raises (ValueError or
KeyError) every time; then sum() drains a generator of 20,000 items.  Each
call, raise and resume is a new eval-loop activation (a new C-level call up
to 3.10), so a read that trails the sample by tens of microseconds almost
never finds the stack the sample had: only the sample's own record of each
activation (the eval loop's instruction pointer and frame) can tell.
Runs on 2.7 and 3.x.
"""
import sys
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def thrower(i):
    if i % 2:
        raise ValueError(i)
    return {}[i]


def catcher(n):
    caught = 0
    for i in range(n):
        try:
            thrower(i)
        except (ValueError, KeyError):
            caught += 1
    return caught


def gen(n):
    for i in range(n):
        yield i


def main(seconds):
    end = clock() + seconds
    while clock() < end:
        catcher(20000)
        sum(gen(20000))


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
