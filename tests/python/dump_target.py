"""Target of e2e.dump: three threads with known stacks and locals.

  compressor  zlib.crc32 of a 4000-byte buffer in a loop: inside libz
              most of the time, holding the GIL (zlib releases it only
              for buffers over 5 KB)
  sleeper     time.sleep(1) in a loop
  waiter      blocked on a threading.Lock the main thread holds

STATE (argv[1]) is rewritten every 50 ms by the main thread as JSON:
tids by thread, and each thread's progress counter. When the file GO
(argv[2]) exists, the threads finish; the last line printed is the result:
"result ok=True compressions=N sleeps=M waited=True".
Runs under 2.7 and 3.x."""
import json
import os
import sys
import threading
import time
import zlib

STATE, GO = sys.argv[1], sys.argv[2]
DATA = (b"ember dump " * 375) + bytes(bytearray(range(250)))
CRC = zlib.crc32(DATA)
progress = {"compressor": 0, "sleeper": 0, "waiter": 0}
tids = {}
ok = [True]
lock = threading.Lock()
stop = threading.Event()


def my_tid():
    try:
        return threading.get_native_id()
    except AttributeError:   # before 3.8
        import ctypes
        return ctypes.CDLL(None).syscall(186)


def compress_loop(level):
    label = "zlib"
    tids["compressor"] = my_tid()
    while not stop.is_set():
        if zlib.crc32(DATA) != CRC:   # CRC_LINE
            ok[0] = False
        progress["compressor"] += 1
    return label


def sleeper(seconds):
    count = 42
    pi = 3.25
    name = "sleepy"
    blob = b"\x00ab"
    nothing = None
    flag = True
    neg = -7
    big = 2 ** 100
    table = {"a": 1}
    tids["sleeper"] = my_tid()
    while not stop.is_set():
        time.sleep(seconds)   # SLEEP_LINE
        progress["sleeper"] += 1
    return (count, pi, name, blob, nothing, flag, neg, big, table)


def wait_lock(what):
    tids["waiter"] = my_tid()
    what.acquire()   # LOCK_LINE
    progress["waiter"] += 1
    what.release()


def write_state():
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "tids": tids, "progress": progress}, f)
    os.rename(tmp, STATE)


def main():
    lock.acquire()
    threads = [threading.Thread(target=compress_loop, args=(6,), name="compressor"),
               threading.Thread(target=sleeper, args=(1.0,), name="sleeper"),
               threading.Thread(target=wait_lock, args=(lock,), name="waiter")]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while not os.path.exists(GO) and time.time() < deadline:
        if len(tids) == 3:
            write_state()
        time.sleep(0.05)
    stop.set()
    lock.release()
    for t in threads:
        t.join()
    write_state()
    print("result ok=%s compressions=%d sleeps=%d waited=%s"
          % (ok[0], progress["compressor"], progress["sleeper"], progress["waiter"] == 1))


main()
