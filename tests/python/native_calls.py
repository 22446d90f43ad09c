"""Known truth for merged stacks: each Python function calls its own native
hot function (OpenCV, NumPy/OpenBLAS, zlib), each ~10 ms a call, so each
gets about a quarter of the samples; ~SECONDS in total.  N: the side of the
square matrix multiplied (default 600, ~10 ms with OpenBLAS; the reference
BLAS of libblas3 needs about 300 for as much time).
usage: native_calls.py SECONDS [N]"""
import sys
import time
import zlib

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)

import cv2
import numpy as np

cv2.setNumThreads(0)        # keep OpenCV's work on this thread


def blur_step(img):
    return cv2.GaussianBlur(img, (61, 61), 0)


def edges_step(img):
    return cv2.Canny(img, 50, 150)


def matmul_step(a):
    return a.dot(a)


def compress_step(data):
    return zlib.compress(data, 6)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    rng = np.random.default_rng(1)
    img = (rng.random((480, 640)) * 255).astype(np.uint8)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    a = rng.random((n, n))
    data = rng.integers(0, 4, 1 << 16, dtype=np.uint8).tobytes()
    deadline = clock() + seconds
    while clock() < deadline:
        blur_step(img)
        edges_step(img)
        matmul_step(a)
        compress_step(data)


main()
