# Slowdown target: a fixed amount of NumPy and OpenCV work (matrix products
# on OpenBLAS's threads, blurs on OpenCV's).  Prints bench.py's line with
# the work's *wall* time in the cpu field: the pools' threads spin while they
# wait, so the process's CPU time measures their wait policy, not the work.
# usage: python3 np_work.py [ROUNDS]
import resource
import sys
import time

import cv2
import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1400
rng = np.random.default_rng(1)
a = rng.random((300, 300))
img = (rng.random((480, 640, 3)) * 255).astype(np.uint8)
t0 = time.perf_counter()
s = 0.0
for _ in range(n):
    s += float((a @ a)[0, 0])
    s += float(cv2.GaussianBlur(img, (9, 9), 0)[0, 0, 0])
work = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
print("cpu %.6f total %.6f check %d" % (work, ru.ru_utime + ru.ru_stime, int(s) & 1))
