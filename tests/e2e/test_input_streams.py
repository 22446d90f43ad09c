"""convert / report / diff read each input once (docs/cli.md, "Reading profiles").

- folded stacks through standard input (`-`), a /dev/fd/N path (what
  `<(command)` gives) and a FIFO give the exact sample total of the file,
  and `convert -` writes what `convert FILE` writes;
- an .ember file through a pipe reads as the file does; `diff - FILE` works,
  `diff - -` is a usage error saying why;
- gzip bombs (a valid header then 200 MB of zeros; a string-table section
  that claims and holds 200 MB of zeros) and /dev/zero fail with exit 65 and
  one line, within seconds, with bounded peak RSS (the child's ru_maxrss);
- a damaged .ember file names its gzip layer: a bad CRC as "CRC mismatch",
  a flipped compressed byte as "corrupt .ember (gzip: ...)";
- a NUL byte in a frame name is shown as U+FFFD, with one warning line.

No recording: the .ember file comes from `ember convert`.
"""
import os
import threading
import time
import zlib
import subprocess
import emberlib as E

chk = E.Checker("e2e.input_streams")
d = E.tmpdir()
# The child's ru_maxrss is an upper bound of ember's peak: Linux keeps the
# larger of it and what the forked copy of this script had mapped at exec.
RSS_LIMIT_KB = 200 * 1024
# ASan keeps freed blocks in quarantine (256 MB by default), which would
# count in the peak RSS; without it the peak is what ember itself holds.
ENV = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0").lstrip(":"))


class Run:
    def __init__(self, cmd, rc, out, err, elapsed, maxrss_kb):
        self.cmd, self.rc, self.stdout, self.stderr = cmd, rc, out, err
        self.elapsed, self.maxrss_kb = elapsed, maxrss_kb

    def describe(self):
        return "$ %s\nexit %s after %.2f s, peak RSS %d KB\nstderr:\n%s" % (
            " ".join(self.cmd), self.rc, self.elapsed, self.maxrss_kb, self.stderr)

    def lines(self):
        return [l for l in self.stderr.splitlines() if l.strip()]


def feed(fd, data):
    """Write data to fd from a thread, then close it."""
    def go():
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except (BrokenPipeError, OSError):
            pass
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def run(args, stdin_data=None, pass_fds=(), timeout=60):
    """ember ARGS with stdin_data on a pipe; the child's own peak RSS."""
    cmd = [E.ember()] + [str(a) for a in args]
    out_path, err_path = os.path.join(d, "out.txt"), os.path.join(d, "err.txt")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                             stdout=out, stderr=err, pass_fds=pass_fds, env=ENV, start_new_session=True)
        if stdin_data is not None:
            feed(os.dup(p.stdin.fileno()), stdin_data)
            p.stdin.close()
        timer = threading.Timer(timeout, E.kill_group, [p.pid])
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - t0
    r = Run(cmd, p.returncode, open(out_path, errors="replace").read(), open(err_path, errors="replace").read(),
            elapsed, ru.ru_maxrss)
    print(r.describe(), flush=True)
    return r


def folded_total(path):
    total = 0
    for line in open(path, "rb"):
        total += int(line.rsplit(None, 1)[1])
    return total


# A known folded file of about 3 MB: lines up to ~30 KB long straddle the
# reads of a pipe.  Its total is computed as it is written.
known = os.path.join(d, "known.folded")
total = 0
with open(known, "w") as f:
    for i in range(1500):
        depth = (i * 7919) % 1000 if i % 100 else 8000
        count = i % 7 + 1
        frames = ["main", "run (app.py:%d)" % (i % 11)] + ["f%d" % (k % 17) for k in range(depth)]
        f.write(";".join(frames) + " %d\n" % count)
        total += count
data = open(known, "rb").read()
want = "samples: %d" % total

r = run(["report", known])
chk.check(r.rc == 0 and want in r.stdout, "report FILE: %s" % want, r.describe())
ref_out = os.path.join(d, "ref.folded")
r = run(["convert", "-q", known, "-o", ref_out])
chk.check(r.rc == 0 and folded_total(ref_out) == total, "convert FILE keeps the total %d" % total, r.describe())

# standard input
r = run(["report", "-"], stdin_data=data)
chk.check(r.rc == 0 and want in r.stdout, "report - (pipe on stdin): %s" % want, r.describe() + "\n" + r.stdout[:200])
pipe_out = os.path.join(d, "pipe.folded")
r = run(["convert", "-", "-o", pipe_out], stdin_data=data)
chk.check(r.rc == 0 and os.path.exists(pipe_out) and open(pipe_out, "rb").read() == open(ref_out, "rb").read(),
          "convert - writes exactly what convert FILE writes", r.describe())

# /dev/fd/N, as <(cat FILE) gives it
for sub in ("report", "convert"):
    rfd, wfd = os.pipe()
    feed(wfd, data)
    args = [sub, "/dev/fd/%d" % rfd] + (["-o", os.path.join(d, "fd.folded")] if sub == "convert" else [])
    r = run(args, pass_fds=(rfd,))
    os.close(rfd)
    ok = want in r.stdout if sub == "report" else folded_total(os.path.join(d, "fd.folded")) == total
    chk.check(r.rc == 0 and ok, "%s /dev/fd/N (a pipe): total %d" % (sub, total), r.describe())

# a FIFO: opened once, read to its end, no hang
fifo = os.path.join(d, "fifo")
os.mkfifo(fifo)
threading.Thread(target=lambda: open(fifo, "wb").write(data), daemon=True).start()
r = run(["report", fifo], timeout=20)
chk.check(r.rc == 0 and want in r.stdout, "report FIFO: %s, no hang" % want, r.describe())

# an .ember file through a pipe and /dev/fd/N
ember_file = os.path.join(d, "known.ember")
r = run(["convert", "-q", known, "-o", ember_file])
chk.check(r.rc == 0, "convert folded -> .ember", r.describe())
edata = open(ember_file, "rb").read()
r = run(["report", "-"], stdin_data=edata)
chk.check(r.rc == 0 and want in r.stdout, "report - (.ember on a pipe): %s" % want, r.describe())
rfd, wfd = os.pipe()
feed(wfd, edata)
r = run(["report", "/dev/fd/%d" % rfd], pass_fds=(rfd,))
os.close(rfd)
chk.check(r.rc == 0 and want in r.stdout, "report /dev/fd/N (.ember): %s" % want, r.describe())

# diff: one input may be standard input, not both
r = run(["diff", "-", ember_file], stdin_data=data)
chk.check(r.rc == 0 and ("BASE: <stdin>: {:,} samples".format(total)) in r.stdout,
          "diff - FILE compares, BASE being <stdin> with %d samples" % total, r.describe() + "\n" + r.stdout[:300])
r = run(["diff", "-", "-"], stdin_data=data)
chk.check(r.rc == 64 and "standard input" in r.stderr, "diff - - is a usage error (64) saying why", r.describe())


# Gzip bombs and /dev/zero: exit 65, one line, seconds, bounded memory.
def uvarint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7f) | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(out)


def gzip_zeros(head, zeros):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(head)]
    block = bytes(1 << 20)
    for _ in range(zeros >> 20):
        parts.append(c.compress(block))
    parts.append(c.flush())
    return b"".join(parts)


ZEROS = 200 << 20
bombs = {
    "zeros.ember": (gzip_zeros(b"EMBRPROF\x01", ZEROS), "bad section tag 0x00"),
    "strings.ember": (gzip_zeros(b"EMBRPROF\x01S" + uvarint(ZEROS + 6) + b"\x01" + uvarint(ZEROS), ZEROS),
                      "gzip bomb"),
}
for name, (blob, text) in bombs.items():
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(blob)
    for how, args, stdin in (("file", ["report", path], None), ("pipe", ["report", "-"], blob)):
        r = run(args, stdin_data=stdin, timeout=30)
        lines = r.lines()
        chk.check(r.rc == 65 and len(lines) == 1 and text in lines[0],
                  "%s (%d KB of gzip) as a %s: exit 65, one line saying '%s'" % (name, len(blob) >> 10, how, text),
                  r.describe())
        chk.check(r.elapsed < 5, "%s as a %s: refused in %.2f s (< 5)" % (name, how, r.elapsed))
        chk.check(r.maxrss_kb < RSS_LIMIT_KB, "%s as a %s: peak RSS %d MB (< %d)" % (
            name, how, r.maxrss_kb >> 10, RSS_LIMIT_KB >> 10))

r = run(["report", "/dev/zero"], timeout=30)
lines = r.lines()
chk.check(r.rc == 65 and len(lines) == 1 and "not folded stacks" in lines[0] and "NUL" in lines[0],
          "/dev/zero: exit 65, one line (not folded stacks, NUL bytes)", r.describe())
chk.check(r.elapsed < 5 and r.maxrss_kb < RSS_LIMIT_KB,
          "/dev/zero: refused in %.2f s, peak RSS %d MB" % (r.elapsed, r.maxrss_kb >> 10))

# damaged .ember files: the gzip layer is named
crc = bytearray(edata)
crc[-8] ^= 0xFF
flip = bytearray(edata)
flip[len(flip) // 2] ^= 0x55
for name, blob, text in (("crc.ember", crc, "crc.ember: corrupt .ember (gzip: CRC mismatch)"),
                         ("flip.ember", flip, "flip.ember: corrupt .ember (gzip: ")):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(blob)
    r = run(["convert", path, "-o", os.path.join(d, "never.svg")])
    lines = r.lines()
    chk.check(r.rc == 65 and len(lines) == 1 and text in lines[0] and "not folded" not in lines[0],
              "%s: exit 65, one line '%s...'" % (name, text), r.describe())

# a NUL byte in a frame name
nul = os.path.join(d, "nul.folded")
with open(nul, "wb") as f:
    f.write(b"main;f\0oo;bar 3\nmain;f\0oo 2\nmain;g 1\n")
out = os.path.join(d, "nul.out.folded")
r = run(["convert", nul, "-o", out])
text = open(out, "rb").read().decode("utf-8") if os.path.exists(out) else ""
chk.check(r.rc == 0 and text == "main;f\ufffdoo 2\nmain;f\ufffdoo;bar 3\nmain;g 1\n",
          "NUL in a name: kept whole, the NUL shown as U+FFFD", repr(text))
warn = [l for l in r.lines() if "NUL" in l]
chk.check(len(warn) == 1 and "1 frame name(s) with NUL bytes" in warn[0], "NUL: one warning line, counting 1 name",
          r.stderr)
chk.finish()
