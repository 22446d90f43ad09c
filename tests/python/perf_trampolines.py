"""Known truth for CPython's perf trampolines (3.12+, `-X perf`): every
Python call goes through a small JIT trampoline without CFI between two
eval-loop activations.  top -> mid -> leaf (a pure-Python loop) and
mid -> comp (zlib, native), for SECONDS of its CPU time.
usage: perf_trampolines.py SECONDS"""
import sys
import time
import zlib

DATA = bytes(range(256)) * 4000


def leaf(n):
    x = 0
    for i in range(n):
        x += i
    return x


def comp():
    return zlib.compress(DATA, 6)


def mid(n):
    return leaf(n) + len(comp())


def top(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        mid(20000)


top(float(sys.argv[1]))
