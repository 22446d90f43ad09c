"""Known truth for merged stacks through NumPy's dispatch: each step
function makes one kind of NumPy call, a few milliseconds each, in turn for
~SECONDS.  The marked lines are the ones each step runs.
- ufunc_step: a ufunc (np.exp into a preallocated array): the ufunc
  machinery, then its inner loop (with AVX-512, SVML's __svml_exp8*);
- sort_step: np.sort (x86-simd-sort's np::qsort_simd::QSort_* on CPUs
  with AVX2 or AVX-512);
- fft_step: np.fft.fft (pocketfft, in the _pocketfft_umath extension);
- matmul_step: a matrix product (the BLAS dgemm_ through cblas_dgemm);
- callback_step: a ufunc made by np.frompyfunc, whose loop calls the Python
  function callback_leaf for every element: Python under NumPy's C under
  Python.
usage: numpy_dispatch.py SECONDS"""
import sys
import time

import numpy as np


def callback_leaf(v):
    return v * 2.0 + 1.0                          # LINE-LEAF


def ufunc_step(x, out):
    return np.exp(x, out=out)                     # LINE-UFUNC


def sort_step(x):
    return np.sort(x)                             # LINE-SORT


def fft_step(x):
    return np.fft.fft(x)                          # LINE-FFT


def matmul_step(a):
    return a @ a                                  # LINE-MATMUL


def callback_step(f, x):
    return f(x)                                   # LINE-CALLBACK


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    rng = np.random.default_rng(1)
    x = rng.random(1 << 20)
    out = np.empty_like(x)
    s = rng.random(1 << 19)
    f = rng.random(1 << 17)
    a = rng.random((250, 250))
    c = rng.random(50000)
    leaf = np.frompyfunc(callback_leaf, 1, 1)
    deadline = time.time() + seconds
    while time.time() < deadline:
        ufunc_step(x, out)
        sort_step(s)
        fft_step(f)
        matmul_step(a)
        callback_step(leaf, c)


main()
