"""multiprocessing workers burning Python code in child_work.
usage: multiproc.py SECONDS"""
import multiprocessing
import sys
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def child_work(seconds):
    deadline = clock() + seconds
    x = 0
    while clock() < deadline:
        for i in range(2000):
            x += i
    return x


def parent_wait(pool, seconds):
    return pool.map(child_work, [seconds, seconds])


if __name__ == "__main__":
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    multiprocessing.set_start_method("fork")
    with multiprocessing.Pool(2) as pool:
        parent_wait(pool, secs)
