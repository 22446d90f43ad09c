"""Many small PyTorch operators on two threads, as a model's inference loop
runs them: each parallel region lasts microseconds, and between two of
them OpenMP's threads wait for the next, spinning unless OMP_WAIT_POLICY
says otherwise.  small_ops runs them for ~SECONDS; a pure Python step
between them keeps the workers idle a little each time.
usage: torch_small_ops.py SECONDS"""
import sys
import time

import torch

torch.set_num_threads(2)
x = torch.randn(64 * 1024)
y = torch.randn(64 * 1024)


def python_step():
    s = 0
    for i in range(300):
        s += i
    return s


def small_ops(seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        torch.add(x, y)
        torch.relu(x)
        python_step()


small_ops(float(sys.argv[1]))
