"""The workload of e2e.top: the main thread spends nearly all its time in
hot_spin; a thread named "helper-thread" runs warm_step, with short sleeps
that let the main thread have the GIL most of the time.  argv[1]: seconds to run; argv[2] (optional): a file to
write the process id to."""
import sys
import threading
import time


def hot_spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def warm_step(n):
    s = 0
    for i in range(n):
        s ^= i
    return s


def helper(end):
    while time.time() < end:
        warm_step(100000)
        time.sleep(0.01)


def main():
    end = time.time() + float(sys.argv[1])
    if len(sys.argv) > 2:
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write("%d\n" % __import__("os").getpid())
        __import__("os").rename(sys.argv[2] + ".tmp", sys.argv[2])
    t = threading.Thread(target=helper, args=(end,), name="helper-thread", daemon=True)
    t.start()
    while time.time() < end:
        hot_spin(100000)
    t.join()


main()
