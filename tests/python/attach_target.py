"""Runs until killed: busy_function burns CPU; writes a heartbeat file."""
import sys
import time


def busy_function():
    x = 0
    for i in range(200000):
        x += i
    return x


def main(beat):
    n = 0
    while True:
        busy_function()
        n += 1
        if n % 20 == 0:
            with open(beat, "w") as f:
                f.write("%d\n" % n)


main(sys.argv[1])
