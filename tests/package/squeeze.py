"""The package test's Python target: squeeze() compresses with zlib (native
code under a Python function) for 1 s of this process's CPU time."""
import os
import time
import zlib


def squeeze(data, seconds):
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += len(zlib.compress(data, 9))
    return n


def main():
    data = os.urandom(1 << 16) + bytes(1 << 16)
    print(squeeze(data, 1.0))


main()
