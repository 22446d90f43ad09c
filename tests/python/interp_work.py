"""Known truth for the interpreter's own C code under the Python line that
ran it: each stage function makes the interpreter do one kind of work in C,
in turn for ~SECONDS of the process's CPU time (so that a loaded machine
runs as many rounds: 2.7 and 3.x):
- collect_stage: gc.collect() of cycles made (with the collector off) in
  make_cycles: the cyclic garbage collector;
- unpickle_stage: pickle.loads of a large list (the _pickle module's C
  loader; 2.7: cPickle);
- parse_stage: ast.parse of generated source (the compiler's parser and
  AST builder);
- sort_stage: list.sort of a large list of floats (no Python key: the
  built-in's own comparison loop).
The marked lines are the ones each stage runs.
usage: interp_work.py SECONDS"""
import ast
import gc
import sys
import time

try:
    import cPickle as pickle      # 2.7: the C pickle
except ImportError:
    import pickle


class Node(object):
    def __init__(self, other):
        self.other = other


def make_cycles(n):
    for _ in range(n):
        a = Node(None)
        a.other = Node(a)


def collect_stage():
    return gc.collect()                     # LINE-COLLECT


def unpickle_stage(blob):
    return pickle.loads(blob)               # LINE-UNPICKLE


def parse_stage(src):
    return ast.parse(src)                   # LINE-PARSE


def sort_stage(xs):
    ys = list(xs)
    ys.sort()                               # LINE-SORT
    return ys


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    blob = pickle.dumps([(i, str(i), float(i)) for i in range(100000)], 2)
    src = "\n".join("def f%d(x):\n    return x * %d + (x - %d) // 3" % (i, i, i) for i in range(1500))
    xs = [((i * 7919) % 100003) / 7.0 for i in range(400000)]
    gc.disable()
    cpu = getattr(time, "process_time", None) or time.clock   # 2.7: time.clock is CPU time
    deadline = cpu() + seconds
    while cpu() < deadline:
        make_cycles(60000)
        collect_stage()
        unpickle_stage(blob)
        parse_stage(src)
        sort_stage(xs)


main()
