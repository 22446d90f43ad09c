"""Recurses DEPTH (argv[1], default 50000) Python frames deep, then burns CPU
in leaf_spin for SECS (argv[2], default 1.0) seconds (e2e.python_deep).
Up to 3.10 every Python call is a C call too: 8 MiB of C stack holds a few
thousand of them, not 50,000."""
import sys
import time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
sys.setrecursionlimit(DEPTH + 1000)


def leaf_spin():
    end = time.time() + SECS
    x = 0
    while time.time() < end:
        x += 1
    return x


def recurse(n):
    if n == 0:
        return leaf_spin()
    return recurse(n - 1)


recurse(DEPTH)
