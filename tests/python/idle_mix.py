"""Target of e2e.idle: for SECONDS of wall time (argv[1], default 2), the
main thread computes a quarter of it in crunching(), sleeps half of it in
napping() and spends a quarter blocked on a pipe in waiting() (a child
process writes after that delay).  (Computing first: ember registers a
thread with its frame copier at its first samples, and time off CPU
before that has no Python frames.)  With `gil` as argv[2], two threads
compute pure Python at once instead, each waiting for the GIL while the
other holds it.  With `tail`, the main thread computes for a quarter of
SECONDS and then sleeps in napping() until killed."""
import os
import sys
import threading
import time


def napping(s):
    time.sleep(s)


def waiting(s):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        time.sleep(s)
        os.write(w, b"x")
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)


def crunching(s):
    end = time.monotonic() + s
    n = 0
    while time.monotonic() < end:
        for i in range(200):
            n += i * i
    return n


def contender(s):
    crunching(s)


def main():
    total = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    if len(sys.argv) > 2 and sys.argv[2] == "gil":
        ts = [threading.Thread(target=contender, args=(total,), name="contender-%d" % i) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return
    if len(sys.argv) > 2 and sys.argv[2] == "tail":
        print("ready", flush=True)
        crunching(total * 0.25)
        napping(3600)
    crunching(total * 0.25)
    napping(total * 0.5)
    waiting(total * 0.25)


main()
