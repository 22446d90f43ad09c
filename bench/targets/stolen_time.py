# Time taken from a CPU-bound Python thread, measured from inside it: a
# loop (20 frames deep, like a real call path) reads CLOCK_MONOTONIC
# back to back; any step longer than GAP_NS is time the thread did not
# run its own code (an interrupt, a profiler's sample, the host).  Each
# gap is logged with how long the next REFILL iterations took, which
# shows the cost of caches refilled after the interruption.  A profiler's
# samples carry their CLOCK_MONOTONIC time, so the bench can tell which
# gaps are samples and what each cost the target.
# Output (OUT, after the run): "ITER_NS REFILL" then one line per gap:
# "START_NS LENGTH_NS NEXT_REFILL_ITERATIONS_NS".
# usage: python3 stolen_time.py SECONDS DEPTH OUT
import sys
import time

GAP_NS = 1500
REFILL = 64


def level(n, seconds, out):
    if n > 1:
        return level(n - 1, seconds, out)
    clock = time.perf_counter_ns   # clock_gettime(CLOCK_MONOTONIC) on Linux
    gaps = []
    start = last = clock()
    stop = start + int(seconds * 1e9)
    iters = 0
    pending = None            # [start, length, iterations left, time at the gap's end]
    while last < stop:
        t = clock()
        iters += 1
        if pending is not None:
            pending[2] -= 1
            if pending[2] == 0:
                gaps.append((pending[0], pending[1], t - pending[3]))
                pending = None
        if t - last > GAP_NS:
            if pending is not None:   # a gap within the refill window: its refill is unknown
                gaps.append((pending[0], pending[1], -1))
            pending = [last, t - last, REFILL, t]
        last = t
    with open(out, "w") as f:
        f.write("%.3f %d\n" % ((last - start) / iters, REFILL))
        for g in gaps:
            f.write("%d %d %d\n" % g)


level(int(sys.argv[2]), float(sys.argv[1]), sys.argv[3])
