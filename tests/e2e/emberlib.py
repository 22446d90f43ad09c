"""Shared helpers for ember's end-to-end tests (standard library only).

Every test script is run by ctest as
    /usr/bin/python3 test_X.py --ember PATH/ember --targets DIR
and exits 0 (pass), 1 (fail) or 77 (skip, after printing "SKIP: reason").
Checks are collected (Checker) so one run reports every failed expectation,
with the command line, exit status, stderr and the top stacks for context.
"""
import argparse
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
PYTHON = "/usr/bin/python3"

_args = None


def args():
    global _args
    if _args is None:
        p = argparse.ArgumentParser()
        p.add_argument("--ember", default=os.environ.get("EMBER"))
        p.add_argument("--targets", default=os.environ.get("EMBER_TARGETS"))
        _args = p.parse_args()
        if not _args.ember or not _args.targets:
            p.error("need --ember and --targets (or $EMBER and $EMBER_TARGETS)")
    return _args


def ember():
    return args().ember


def python_arg(default=None):
    """The interpreter named by --python EXE (taken out of sys.argv before
    args() parses the rest), else default; without both, a usage error."""
    for i, a in enumerate(sys.argv):
        if a == "--python" and i + 1 < len(sys.argv):
            exe = sys.argv[i + 1]
            del sys.argv[i:i + 2]
            return exe
    if default is None:
        fail_now("--python EXE is required")
    return default


_MAPPED = r'''
import os, sys
exec(sys.argv[1])
seen = []
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if sys.argv[2] in os.path.basename(path) and path not in seen:
        seen.append(path)
        print("MAPPED " + os.path.realpath(path))
'''


def mapped_after(py, code, word, env=None, timeout=120):
    """(files, result): the files with `word` in their name that the
    interpreter py has mapped after running code (real paths as py sees them:
    which build is behind an alternatives link such as libblas.so.3)."""
    res = run([py, "-c", _MAPPED, code, word], env=env, quiet=True, timeout=timeout)
    files = [l[len("MAPPED "):] for l in res.stdout.splitlines() if l.startswith("MAPPED ")]
    return files, res


def blas_kind(files):
    """"openblas", "reference" (libblas3's netlib BLAS) or "other", from
    the files mapped_after(..., "blas") found."""
    if any("openblas" in f for f in files):
        return "openblas"
    if any("/blas/libblas" in f for f in files):
        return "reference"
    return "other"


def target(name):
    path = os.path.join(args().targets, name)
    if not os.access(path, os.X_OK):
        fail_now("target program %s is missing (build the tests/targets directory)" % path)
    return path


def marked_lines(path):
    """The lines of a test program marked "# LINE-NAME": {"name": line}
    (the name in lower case)."""
    lines = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# LINE-([A-Z]+)", line)
            if m:
                lines[m.group(1).lower()] = n
    return lines


def skip(reason):
    print("SKIP: %s" % reason, flush=True)
    sys.exit(SKIP)


def require_interpreter(py):
    """Skips loudly when the interpreter PY is not there: the pyenv builds
    (2.7, 3.6-3.13) are not in Debian's archive, so make deps-test cannot
    install them; the README's "Building and testing by hand" says how to get them."""
    if not os.access(py, os.X_OK):
        skip("interpreter %s is not installed (not in Debian's archive: "
             "pyenv install it: README.md, \"Building and testing by hand\")" % py)


def fail_now(msg):
    print("FAIL: %s" % msg, flush=True)
    sys.exit(1)


def tmpdir(mode=None):
    """A fresh directory, removed at exit unless $EMBER_E2E_KEEP is set."""
    d = tempfile.mkdtemp(prefix="ember-e2e-")
    if mode is not None:
        os.chmod(d, mode)
    if not os.environ.get("EMBER_E2E_KEEP"):
        atexit.register(shutil.rmtree, d, True)
    return d


class Nobody:
    """A sandbox for running ember as user nobody (see nobody_sandbox)."""

    def __init__(self, user, prefix, bindir, outdir):
        self.user = user          # nobody's passwd entry
        self.prefix = prefix      # the command prefix that runs the rest as nobody
        self.bindir = bindir      # 0755, root's: the copied programs
        self.outdir = outdir      # 0700, nobody's: where its outputs go

    def path(self, name):
        return os.path.join(self.bindir, name)


def nobody_sandbox(programs, files=()):
    """For a test run as root that runs ember as user nobody (setpriv, no
    supplementary groups): copies of PROGRAMS (mode 0755) and FILES (0644)
    in a fresh 0755 directory, and an output directory only nobody may
    write.  Skips (77), saying why, without root, setpriv or user nobody,
    or when nobody cannot reach the temporary directories."""
    import grp
    import pwd
    if os.geteuid() != 0:
        skip("not running as root, cannot switch to user nobody")
    setpriv = shutil.which("setpriv")
    if not setpriv:
        skip("setpriv (util-linux) not installed")
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        skip("no user nobody")
    try:
        group = grp.getgrnam("nogroup").gr_name
    except KeyError:
        group = grp.getgrgid(user.pw_gid).gr_name
    bindir = tmpdir(0o755)
    for src, mode in [(p, 0o755) for p in programs] + [(f, 0o644) for f in files]:
        dst = os.path.join(bindir, os.path.basename(src))
        shutil.copy(src, dst)
        os.chmod(dst, mode)
    outdir = tmpdir(0o700)
    os.chown(outdir, user.pw_uid, user.pw_gid)
    for d in (bindir, outdir):
        if not os.stat(os.path.dirname(d)).st_mode & 0o001:
            skip("%s is not traversable by others" % os.path.dirname(d))
    prefix = [setpriv, "--reuid=%d" % user.pw_uid, "--regid=%s" % group, "--clear-groups", "--"]
    return Nobody(user, prefix, bindir, outdir)


class Checker:
    """Collects failed expectations; finish() exits 1 if any failed."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def check(self, cond, msg, context=None):
        if cond:
            print("ok: %s" % msg, flush=True)
        else:
            print("FAILED: %s" % msg, flush=True)
            if context:
                print(_indent(context), flush=True)
            self.failures.append(msg)
        return bool(cond)

    def finish(self):
        if self.failures:
            print("\n%s: %d check(s) failed:" % (self.name, len(self.failures)))
            for f in self.failures:
                print("  - " + f)
            sys.exit(1)
        print("\n%s: all checks passed" % self.name)
        sys.exit(0)


def _indent(text, prefix="    | "):
    return "\n".join(prefix + line for line in str(text).splitlines())


class Result:
    def __init__(self, cmd, rc, stdout, stderr, elapsed):
        self.cmd, self.rc, self.stdout, self.stderr, self.elapsed = cmd, rc, stdout, stderr, elapsed

    def describe(self):
        return "$ %s\nexit status %s after %.2f s\nstderr:\n%s" % (
            " ".join(self.cmd), self.rc, self.elapsed, _indent(self.stderr or "(empty)"))

    def stderr_lines(self):
        return [l for l in self.stderr.splitlines() if l.strip()]


def _no_core():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, timeout=60, env=None, cwd=None, quiet=False):
    """Runs cmd in its own session (so a hang can be killed with its
    children), returns a Result whose rc is negative for death by signal."""
    cmd = [str(c) for c in cmd]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", env=env, cwd=cwd, start_new_session=True,
                         preexec_fn=_no_core)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        res = Result(cmd, "TIMEOUT", out, err, time.monotonic() - t0)
        print(res.describe(), flush=True)
        print("(killed: did not finish within %d s)" % timeout, flush=True)
        return res
    res = Result(cmd, p.returncode, out, err, time.monotonic() - t0)
    if not quiet:
        print(res.describe(), flush=True)
    return res


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stalled(res):
    """Why the machine held ember back in this run ("" if it did not): the
    kernel dropped samples because ember did not drain in time, or its reads
    of Python frames started more than 10 ms after their samples on average.
    A VM whose host steals the vCPU ember runs on (steal in /proc/stat; seen
    here and in CI: 20-140 ms at a time) does both, and a check of how
    promptly ember reads measures nothing then."""
    why = []
    m = re.search(r"(\d+) samples, (\d+) lost", res.stderr)
    if m and int(m.group(2)) > 0:
        why.append("%s of %s samples lost" % (m.group(2), m.group(1)))
    m = re.search(r"starting (\d+) us after the sample", res.stderr)
    if m and int(m.group(1)) > 10000:
        why.append("reads %.1f ms after their samples" % (int(m.group(1)) / 1000.0))
    return ", ".join(why)


def before_copier(res):
    """How many samples the summary says came before ember had registered
    their thread with the frame copier (0 when it says nothing: under 5%)."""
    m = re.search(r"(\d+) samples came before ember had registered their thread", res.stderr)
    return int(m.group(1)) if m else 0


def copies(res, share, min_reads):
    """(ok, text): the summary says the kernel copied the frames at the
    sample for at least `share` of the reads (of at least min_reads),
    leaving out the samples that came before ember had registered their
    thread with the copier (they have no copy to find: a thread's first
    sample or two, many when the machine held ember back at the start)."""
    m = re.search(r"copied by the kernel at the sample \(BPF\) for (\d+) of (\d+) reads", res.stderr)
    if not m:
        return False, "no BPF line"
    before = before_copier(res)
    copied, reads = int(m.group(1)), int(m.group(2))
    ok = reads >= min_reads and copied >= share * (reads - before)
    return ok, m.group(0) + ("; %d samples before the copier knew their thread" % before if before else "")


def record_unstalled(opts, cmd=None, tries=3, **kw):
    """record(), run again (up to tries runs) while the machine stalled
    ember; returns the last result and, if every run was stalled, why."""
    for i in range(tries):
        res = record(opts, cmd, **kw)
        why = stalled(res)
        if not why or res.rc != 0:
            return res, ""
        print("note: run %d of %d: the machine stalled ember (%s)%s" %
              (i + 1, tries, why, "; again" if i + 1 < tries else ""), flush=True)
    return res, why


def record(opts, cmd=None, timeout=60, **kw):
    """ember record OPTS [-- CMD...]"""
    full = [ember(), "record"] + list(opts)
    if cmd is not None:
        full += ["--"] + list(cmd)
    return run(full, timeout=timeout, **kw)


# ---------------------------------------------------------------- folded

class Profile:
    """A parsed folded file: stacks = [(frames tuple, count)], root first."""

    def __init__(self, stacks, problems, text):
        self.stacks, self.problems, self.text = stacks, problems, text

    @property
    def total(self):
        return sum(c for _, c in self.stacks)

    def count(self, pred):
        return sum(c for f, c in self.stacks if pred(f))

    def frames(self):
        return {fr for f, _ in self.stacks for fr in f}

    def leaves(self):
        """{innermost frame: samples}."""
        counts = {}
        for f, c in self.stacks:
            counts[f[-1]] = counts.get(f[-1], 0) + c
        return counts

    def by_root(self):
        roots = {}
        for f, c in self.stacks:
            roots.setdefault(f[0], []).append((f, c))
        return roots

    def top(self, n=12):
        rows = sorted(self.stacks, key=lambda s: -s[1])[:n]
        lines = ["%6d  %s" % (c, _short(";".join(f))) for f, c in rows]
        return "top stacks (%d samples, %d unique):\n%s" % (self.total, len(self.stacks), "\n".join(lines))


def _short(s, width=400):
    return s if len(s) <= width else s[:150] + " ... " + s[-(width - 155):]


LINE_RE = re.compile(r"^(.+) ([0-9]+)$")


def parse_folded(path):
    """Parses and validates a folded file against docs/cli.md: `root;...;leaf
    COUNT` per line, unique stacks, sorted bytewise, positive integer counts,
    no empty frame, no frame ending in ` DIGITS`.  Violations go to
    Profile.problems (checked by check_format)."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "replace")
    stacks, problems = [], []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif data:
        problems.append("file does not end with a newline")
    seen = set()
    for raw in lines:
        line = raw.decode("utf-8", "replace")
        m = LINE_RE.match(line)
        if not m:
            problems.append("malformed line: %r" % _short(line))
            continue
        stack, count = m.group(1), int(m.group(2))
        frames = tuple(stack.split(";"))
        if count <= 0:
            problems.append("non-positive count: %r" % _short(line))
        if any(fr == "" for fr in frames):
            problems.append("empty frame name: %r" % _short(line))
        bad = [fr for fr in frames if re.search(r" [0-9]+$", fr)]
        if bad:
            problems.append("frame name ends in ' DIGITS': %r" % bad[0])
        if any(ord(ch) < 0x20 for ch in stack):
            problems.append("control character in: %r" % _short(line))
        if stack in seen:
            problems.append("duplicate stack: %r" % _short(stack))
        seen.add(stack)
        stacks.append((frames, count))
    keys_lines = [l for l in lines]
    keys_stacks = [l.rsplit(b" ", 1)[0] for l in lines]
    if keys_lines != sorted(keys_lines) and keys_stacks != sorted(keys_stacks):
        problems.append("lines are not sorted bytewise")
    return Profile(stacks, problems, text)


def load_profile(chk, path, result=None):
    """Parses path, failing the test (with context) if it is missing."""
    if not os.path.exists(path):
        chk.check(False, "output file %s was written" % path, result.describe() if result else None)
        return Profile([], [], "")
    prof = parse_folded(path)
    chk.check(True, "output file %s was written (%d samples)" % (path, prof.total))
    return prof


def check_format(chk, prof):
    chk.check(not prof.problems, "folded output follows the documented format",
              "\n".join(prof.problems[:10]))


RAW_ALLOWED = re.compile(r"^\[[^\]]+\+0x[0-9a-fA-F]+\]$")


def raw_address_frames(prof):
    """Frames that are bare addresses (0x7f..., 7fabc123) instead of a name
    or the documented `[module+0xADDR]`."""
    bad = set()
    for frames, _ in prof.stacks:
        for fr in frames:
            if RAW_ALLOWED.match(fr):
                continue
            if re.search(r"0x[0-9a-fA-F]+", fr) or re.fullmatch(r"[0-9a-fA-F]{8,}", fr):
                bad.add(fr)
    return sorted(bad)


def chain_at_leaf(frames, chain, allowed_after=()):
    """True if `chain` occurs as consecutive frames and everything after it
    (towards the leaf) is in allowed_after (inlined helpers)."""
    n = len(chain)
    for i in range(len(frames) - n, -1, -1):
        if tuple(frames[i:i + n]) == tuple(chain):
            return all(fr in allowed_after for fr in frames[i + n:])
    return False


THREAD_ROOT = re.compile(r"^(.*) \(([0-9]+)\)$")


def thread_root(frame):
    """(name, tid) for a `name (tid)` root frame, else None."""
    m = THREAD_ROOT.match(frame)
    return (m.group(1), int(m.group(2))) if m else None


# ---------------------------------------------------------------- summary

SUMMARY_RE = re.compile(r"([0-9]+) samples, ([0-9]+) lost, ([0-9]+) truncated, ([0-9]+) unwind failures")


def parse_summary(stderr):
    m = SUMMARY_RE.search(stderr)
    if not m:
        return None
    return dict(zip(("samples", "lost", "truncated", "unwind_failures"), map(int, m.groups())))


def stdout_value(res, key, conv=float):
    m = re.search(r"^%s=(\S+)$" % re.escape(key), res.stdout or "", re.M)
    return conv(m.group(1)) if m else None


# ---------------------------------------------------------------- processes

def proc_children(pid):
    """Direct children of pid (all threads' children)."""
    kids = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                    kids += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return kids


def wait_for_child_exe(pid, exe, timeout=10.0):
    """Waits until a descendant of pid runs exe; returns its pid or None."""
    exe = os.path.realpath(exe)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        todo = proc_children(pid)
        while todo:
            c = todo.pop()
            try:
                if os.readlink("/proc/%d/exe" % c) == exe:
                    return c
            except OSError:
                pass
            todo += proc_children(c)
        time.sleep(0.02)
    return None


def perf_fd_count(pid):
    """perf_event fds held by pid and its descendants."""
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if "perf_event" in os.readlink("/proc/%d/fd/%s" % (pid, fd)):
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n + sum(perf_fd_count(c) for c in proc_children(pid))


def proc_status(pid):
    d = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                d[k] = v.strip()
    except OSError:
        pass
    return d


def pid_alive(pid):
    st = proc_status(pid).get("State", "")
    return bool(st) and not st.startswith(("Z", "X"))
