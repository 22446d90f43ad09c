# Slowdown / Python-stack target: a fixed number of interpreter-loop
# iterations.  Prints the CPU time of the loop and of the whole process
# (getrusage at the end, interpreter start-up included).
# usage: python3 loop.py [ITERATIONS]
import resource
import sys
import time


def work(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000000
    t0 = time.process_time()
    s = work(n)
    t1 = time.process_time()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print("cpu %.6f total %.6f check %d" % (t1 - t0, ru.ru_utime + ru.ru_stime, s & 1))


main()
