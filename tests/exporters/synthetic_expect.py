"""What the synthetic profiles of tests/unit/synthetic_profiles.h contain, as
the exporter validators expect to find it (Python 3 standard library only).

test_formats writes <name>.speedscope.json, <name>.pb.gz and
<name>.trace.json for every name below."""

import argparse

INTERVAL_NS = round(1e9 / 99)   # freq_hz 99, no interval_ns: ember_export_interval_ns
START_UNIX_NS = 1763700000 * 10**9
DURATION_NS = 5 * 10**9

_BLUR = ("<module>", "main", "Model.forward", "_PyEval_EvalFrameDefault",
         "cv::GaussianBlur(cv::_InputArray const&, cv::_OutputArray const&)", "cv::hlineSmooth")
_RELU = ("<module>", "main", "Model.forward", "relu")
_READ = ("<module>", "main", "read", "ksys_read")
_GEMM = ("start_thread", "dgemm_kernel_SKYLAKEX")
_CHILD = ("worker_main",)


def _mixed(timeline):
    return {
        # (pid, tid): thread name
        "threads": {(4242, 4242): "python3", (4242, 4250): "blas-worker", (4300, 4300): "python3"},
        # (pid, tid, root-first frame names): samples
        "stacks": {
            (4242, 4242, _BLUR): 700, (4242, 4242, _RELU): 100, (4242, 4242, _READ): 50,
            (4242, 4250, _GEMM): 100, (4300, 4300, _CHILD): 50,
        },
        "total": 1000,
        "timeline": timeline,
        "top": "cv::hlineSmooth",   # most self samples
        "command": "python3 pipeline.py --frames 100",
    }


def _recursive(maxdepth=5, count=10):
    stacks = {}
    for d in range(1, maxdepth + 1):
        stacks[(7, 7, ("main",) + ("rec",) * d + ("leaf",))] = count
        stacks[(7, 7, ("main",) + ("rec",) * d)] = count // 2 + 1
    return {"threads": {(7, 7): "MainThread"}, "stacks": stacks,
            "total": sum(stacks.values()), "timeline": False, "top": "leaf",
            "command": "python3 rec.py"}


# Frame names exactly as synth_hostile makes them (bytes -> text with
# U+FFFD for the ill-formed ones), in stack order after "main".
HOSTILE_NAMES = [
    '<script>alert("x")</script>', "a&b;c", "quote\"apos'", "tab\there", "new\nline",
    "ctrl\x01\x1f\x7f", "nonascii_函数_ünï_😀", "bad\ufffd\ufffdutf8", "trailing 123", "", "  spaced  ",
    "]]>", "\\backslash\\", '{"json": [1,2]}',
]

PROFILES = {
    "mixed": _mixed(True),
    "mixed_notimeline": _mixed(False),
    "hostile": {
        "threads": {(1, 1): "名前", (1, 2): "thr<&>\"'"},
        "stacks": None,      # names are checked separately
        "thread_totals": {(1, 1): sum(10 + i for i in range(0, 14, 2)),
                          (1, 2): sum(10 + i for i in range(1, 14, 2))},
        "total": sum(10 + i for i in range(14)),
        "timeline": False,   # one timed sample per row: not complete, so not used
        "top": None,
        "command": "./evil --name='<script>alert(1)</script>' & \"quoted\"",
    },
    "empty": {"threads": {}, "stacks": {}, "total": 0, "timeline": False, "top": None, "command": "true"},
    "recursive": _recursive(),
    # built in test_formats.c: foo with bar and baz inlined into it, foo
    # alone, and an empty stack
    "inline": {
        "threads": {(1, 1): "app"},
        "stacks": {(1, 1, ("main", "foo", "bar", "baz")): 5, (1, 1, ("main", "foo")): 3,
                   (1, 1, ("[unknown]",)): 2},
        "total": 10, "timeline": False, "top": "baz (inline)", "command": "./app",
    },
}


def thread_totals(exp):
    if exp.get("thread_totals") is not None:
        return dict(exp["thread_totals"])
    totals = {}
    for (pid, tid, _), n in exp["stacks"].items():
        totals[(pid, tid)] = totals.get((pid, tid), 0) + n
    return totals


def profile_name(exp, pid, tid):
    """speedscope profile name of a thread: "name (tid)", with the pid too
    when the profile has several processes."""
    name = exp["threads"][(pid, tid)] or "thread"
    if len({p for p, _ in exp["threads"]}) > 1:
        return "%s (pid %d, tid %d)" % (name, pid, tid)
    return "%s (%d)" % (name, tid)


class Checker:
    """Collects failures; exit status 1 when any."""

    def __init__(self, what):
        self.what = what
        self.failures = 0
        self.passed = 0

    def check(self, cond, msg):
        if cond:
            self.passed += 1
        else:
            self.failures += 1
            print("FAIL %s: %s" % (self.what, msg))
        return cond

    def done(self):
        print("%s: %d passed, %d failed" % (self.what, self.passed, self.failures))
        return 1 if self.failures else 0


def check_hostile_names(c, names):
    """Every hostile frame name (an empty one as "[unknown]") is among names,
    byte for byte."""
    want = {n or "[unknown]" for n in HOSTILE_NAMES}
    c.check(want <= names, "hostile names kept exactly: missing %r" % (want - names))


def checker_args(*flags):
    """The command line test_formats gives a validator: FILE --profile NAME,
    plus the boolean flags named."""
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--profile", required=True, choices=sorted(PROFILES))
    for flag in flags:
        ap.add_argument(flag, action="store_true")
    return ap.parse_args()


def checker_main(check_file):
    """A validator's main: check_file(FILE, NAME) on the command line's
    arguments; its result is the exit status."""
    a = checker_args()
    return check_file(a.file, a.profile)
