"""Known truth for samples of thread pools: each stage function hands its
work to a library's own pool of threads, in turn for ~SECONDS:
- stage_blas: NumPy's matrix product, on OpenBLAS's threads
  (OPENBLAS_NUM_THREADS, set by the test);
- stage_cv: OpenCV's resize, colour conversion and blur, on TBB's threads
  (cv2.setNumThreads(2));
- stage_torch: a convolution and elementwise ops in PyTorch, on OpenMP's
  threads (torch.set_num_threads(2));
- stage_python: pure Python, on the main thread alone.
Each stage measures the process's CPU time it took, every thread's
(time.process_time), the truth a profile is held against: printed at the
end as one line "TRUTH {json}" (seconds per stage, the loop's total, and
how many rounds of the stages it ran).
usage: pool_stages.py SECONDS [STAGE ...] (default: every stage)"""
import json
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


def main():
    seconds = float(sys.argv[1])
    funcs = [globals()["stage_" + s] for s in STAGES]
    truth = {f.__name__: 0.0 for f in funcs}
    start = time.process_time()
    deadline = time.time() + seconds
    rounds = 0
    while time.time() < deadline:
        for f in funcs:
            t = time.process_time()
            f()
            truth[f.__name__] += time.process_time() - t
        rounds += 1
    truth["loop"] = time.process_time() - start
    truth["rounds"] = rounds
    print("TRUTH " + json.dumps(truth), flush=True)


main()
