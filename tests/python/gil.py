"""Two threads: main burns pure Python (holds the GIL); "compressor" spends
its time in zlib.compress, which releases the GIL.  With "pair", the second
thread ("burner") burns pure Python too: the two take turns holding the
GIL (every 5 ms, sys.getswitchinterval()), and a thread running Python
code at a sample is the one holding it.
usage: gil.py SECONDS [pair]"""
import sys
import threading
import time
import zlib

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def compressor(stop, data):
    while not stop.is_set():
        zlib.compress(data, 9)


def python_burn(seconds):
    deadline = clock() + seconds
    x = 0
    while clock() < deadline:
        for i in range(2000):
            x += i
    return x


def burner(stop):
    while not stop.is_set():
        python_burn(0.05)


secs = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
stop = threading.Event()
if sys.argv[2:3] == ["pair"]:
    t = threading.Thread(target=burner, args=(stop,), name="burner")
else:
    data = bytes(bytearray((i * 7919) % 251 for i in range(1 << 20)))
    t = threading.Thread(target=compressor, args=(stop, data), name="compressor")
t.start()
python_burn(secs)
stop.set()
t.join()
