# Slowdown target measured from inside: a CPU-bound interpreter loop that
# prints, every SLICE seconds, "MONOTONIC_TIME ITERATIONS" for that slice.
# A profiler attached for some slices and detached for others then shows
# its cost as a lower rate in its slices -- same process, same memory
# layout, interleaved in time, so the run-to-run noise of separate
# processes (ASLR, CPU placement) drops out.
# usage: python3 loop_rate.py SECONDS [SLICE]
import sys
import time


def chunk():
    s = 0
    for i in range(20000):
        s += i * i % 7
    return s


def main():
    seconds = float(sys.argv[1])
    slice_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    end = time.monotonic() + seconds
    out = sys.stdout
    while True:
        t0 = time.monotonic()
        if t0 >= end:
            break
        n = 0
        while time.monotonic() - t0 < slice_s:
            chunk()
            n += 1
        t1 = time.monotonic()
        out.write("%.6f %.1f\n" % (t1, n * 20000 / (t1 - t0)))
        out.flush()


main()
