"""Known truth for samples of thread pools: each stage function hands its
work to a library's own pool of threads, in turn for ~SECONDS:
- stage_blas: NumPy's matrix product, on OpenBLAS's threads
  (OPENBLAS_NUM_THREADS, set by the test);
- stage_cv: OpenCV's resize, colour conversion and blur, on TBB's threads
  (cv2.setNumThreads(2));
- stage_torch: a convolution and elementwise ops in PyTorch, on OpenMP's
  threads (torch.set_num_threads(2));
- stage_python: pure Python, on the main thread alone.
Each stage measures the process's CPU time it took, every thread's, the
truth a profile is held against: printed at the end as one line
"TRUTH {json}" (seconds per stage, the loop's total, and how many rounds
of the stages it ran). The time is the sum of each thread's own CPU
clock, not time.process_time(): the kernel's process clock brings only
the calling thread up to date and takes the others' time as of their last
tick or context switch (kernel/sched/cputime.c, thread_group_cputime), so
a pool thread still computing, or spinning without a system call, when a
stage ends has up to a tick (1 to 4 ms: CONFIG_HZ 1000 to 250) of that
stage counted in the next one: with stages of a few milliseconds, a large
share. A thread's own clock is read up to date (task_sched_runtime). The
pools' threads live as long as the process: no thread's time ends early.
usage: pool_stages.py SECONDS [STAGE ...] (default: every stage)"""
import json
import os
import sys
import time

import numpy as np

STAGES = sys.argv[2:] or ["blas", "cv", "torch", "python"]
if "cv" in STAGES:
    import cv2
    cv2.setNumThreads(2)
if "torch" in STAGES:
    import torch
    torch.set_num_threads(2)
    conv = torch.nn.Conv2d(16, 32, 3)
    image = torch.randn(4, 16, 64, 64)
    vec = torch.randn(1 << 20)

a = np.random.default_rng(1).random((300, 300))
frame = (np.random.default_rng(2).random((1080, 1920, 3)) * 255).astype(np.uint8)


def stage_blas():
    for _ in range(4):
        a @ a


def stage_cv():
    small = cv2.resize(frame, (960, 540), interpolation=cv2.INTER_AREA)
    cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    cv2.GaussianBlur(small, (9, 9), 0)


def stage_torch():
    with torch.no_grad():
        conv(image)
        torch.relu(vec).exp_()


def stage_python():
    s = 0
    for i in range(40000):
        s += i * i % 7
    return s


def thread_clock(tid):
    """Linux's clock id for thread tid's CPU time (MAKE_THREAD_CPUCLOCK in
    the kernel's posix-timers.h: ~tid << 3, per thread, the scheduler's
    clock)."""
    return ((~tid) << 3) | 4 | 2


def process_cpu():
    """Every live thread's CPU time, each up to date, in seconds."""
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        try:
            total += time.clock_gettime(thread_clock(int(tid)))
        except OSError:
            pass   # the thread ended since the listing
    return total


def main():
    seconds = float(sys.argv[1])
    funcs = [globals()["stage_" + s] for s in STAGES]
    truth = {f.__name__: 0.0 for f in funcs}
    start = process_cpu()
    deadline = time.time() + seconds
    rounds = 0
    while time.time() < deadline:
        for f in funcs:
            t = process_cpu()
            f()
            truth[f.__name__] += process_cpu() - t
        rounds += 1
    truth["loop"] = process_cpu() - start
    truth["rounds"] = rounds
    print("TRUTH " + json.dumps(truth), flush=True)


main()
