"""Methods called on fresh objects, each call a few milliseconds long.

ember reads a sample's Python frames when it drains its rings (every 250 ms
at 99 Hz), and by then most calls are over.  Up to 3.10 a method's class
comes from its first argument (self's type, or cls), which CPython clears
when the call returns; 3.11+ has co_qualname.

usage: short_calls.py SECONDS [CALL_MS]
"""
import sys
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def burn(secs):
    end = clock() + secs
    x = 0
    while clock() < end:
        for i in range(300):
            x += i
    return x


class Model(object):
    def forward(self, secs):
        return burn(secs)

    @classmethod
    def build(cls, secs):
        return burn(secs)


def main():
    total = float(sys.argv[1])
    call = float(sys.argv[2]) / 1000.0 if len(sys.argv) > 2 else 0.01
    end = clock() + total
    while clock() < end:
        Model().forward(call)
        Model.build(call)


main()
