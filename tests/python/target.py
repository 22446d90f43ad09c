# -*- coding: utf-8 -*-
"""Target for tests/unit/test_python_stacks.c (runs on CPython 2.7 and 3.6+).

Threads with known, stable stacks (each ends in sleep_forever), and the main
thread busy in a pure-Python loop at a known line.  Writes READY_FILE (argv[1])
with its pid, version, each thread's OS tid and the line of every
"# MARK:name" comment in this file and the helper files, then spins.

Thread names (threading.Thread.name) are stored every way CPython can keep
instance attributes: "method", "coro" plainly; "deep" after its __dict__ was
asked for (3.11+: a dict next to the values); "gen" with a __dict__ of its
own (3.13: inline values no longer valid); "sorted" a Thread subclass;
"map" renamed after it started; "unicode" a non-ASCII name.  Three threads
have no usable name: "dummy" (started with _thread, then registered by
threading.current_thread() as Dummy-N), "raw" (never registered), "badname"
(its name replaced by an int)."""
import os
import sys
import threading
import time


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None).syscall(186)


TIDS = {}


def sleep_forever():
    while True:
        time.sleep(3600)  # MARK:sleep_forever


def rec(n):
    if n == 0:
        sleep_forever()  # MARK:rec_leaf_call
    return rec(n - 1)  # MARK:rec_call


class Model(object):
    def forward(self, n):
        return rec(n)  # MARK:forward_call


def run_method():
    Model().forward(4)  # MARK:run_method_call


def run_deep():
    Model().forward(14)  # MARK:run_deep_call


def gen():
    yield 1
    sleep_forever()  # MARK:gen_call
    yield 2


def run_gen():
    for x in gen():  # MARK:run_gen_call
        pass


def keyfn(x):
    sleep_forever()  # MARK:keyfn_call
    return x


def run_sorted():
    sorted([3, 1, 2], key=keyfn)  # MARK:sorted_call


def mapfn(x):
    sleep_forever()  # MARK:mapfn_call


def run_map():
    list(map(mapfn, [1]))  # MARK:map_call


def run_coro():
    import target_async
    target_async.run(sleep_forever)


def run_unicode():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, u"\u00fcn\u00efcode_\U0001F600.py")
    with open(path, "rb") as f:
        src = f.read()
    ns = {"sleep_forever": sleep_forever, "__name__": "unicode_mod"}
    exec(compile(src, path, "exec"), ns)
    ns["run"]()


def c():
    n = 0
    while True: n += 1  # MARK:busy


def b():
    c()  # MARK:b_call


def a():
    b()  # MARK:a_call


def marks(path):
    out = []
    with open(path, "rb") as f:
        for i, line in enumerate(f.read().decode("utf-8").splitlines(), 1):
            k = line.find("# MARK:")
            if k >= 0:
                out.append((line[k + 7:].strip(), i))
    return out


UNICODE_NAME = u"\u00fcn\u00ef-\u540d\u524d"


class Worker(threading.Thread):
    def __init__(self, *args, **kwargs):
        self.extra = 1    # an attribute before Thread's own, in a class of its own
        threading.Thread.__init__(self, *args, **kwargs)


def start(name, fn, how=""):
    def body():
        TIDS[name] = gettid()
        fn()
    pyname = {"unicode": UNICODE_NAME, "map": "tmp-map"}.get(name, name)
    if how == "subclass":
        t = Worker(target=body, name=pyname)
    else:
        t = threading.Thread(target=body, name=pyname)
    t.daemon = True
    if how == "materialized":
        t.__dict__
    elif how == "own_dict":
        t.__dict__ = dict(t.__dict__)
    t.start()
    if how == "renamed":
        t.name = name
    elif how == "badname":
        setattr(t, "_Thread__name" if sys.version_info[0] == 2 else "_name", 12345)


def start_raw(name, register):
    """A thread threading did not start: it knows it only when it asks
    (current_thread() makes a _DummyThread)."""
    try:
        import _thread
    except ImportError:
        import thread as _thread

    def body():
        TIDS[name] = gettid()
        if register:
            threading.current_thread()
        sleep_forever()
    _thread.start_new_thread(body, ())


if __name__ == "__main__":
    ready = sys.argv[1]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    workers = [("method", run_method, ""), ("deep", run_deep, "materialized"), ("gen", run_gen, "own_dict"),
               ("sorted", run_sorted, "subclass"), ("map", run_map, "renamed"),
               ("badname", sleep_forever, "badname")]
    if sys.version_info >= (3, 5):
        workers += [("coro", run_coro, ""), ("unicode", run_unicode, "")]
    for name, fn, how in workers:
        start(name, fn, how)
    start_raw("dummy", True)
    start_raw("raw", False)
    while len(TIDS) < len(workers) + 2:
        time.sleep(0.01)
    time.sleep(0.2)
    here = os.path.dirname(os.path.abspath(__file__))
    lines = ["pid %d" % os.getpid(), "version %d.%d.%d" % sys.version_info[:3],
             "thread main %d" % gettid()]
    lines += ["thread %s %d" % kv for kv in sorted(TIDS.items())]
    files = ["target.py"]
    if sys.version_info >= (3, 5):
        files += ["target_async.py", u"\u00fcn\u00efcode_\U0001F600.py"]
    for f in files:
        lines += ["mark %s %d" % m for m in marks(os.path.join(here, f))]
    with open(ready + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(ready + ".tmp", ready)
    a()  # MARK:module_call
