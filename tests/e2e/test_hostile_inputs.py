"""Inputs that are not profiles, or are damaged in ways a user meets
(docs/cli.md, "Reading profiles"):

- random bytes (a 50 MB file, /dev/urandom, and through `diff`) are refused
  as binary data within 2 s, exit 65, one line; text that is not folded
  stacks (base64) is refused after its first 1,000 lines; a folded file
  with a few bad lines still reads, with a warning;
- a lone CR ends a line (classic Mac OS): no sample is lost and the warning
  says "CR alone", not "CR LF";
- running out of memory while reading (a small RLIMIT_AS) is exit 70 with
  "out of memory", not 65 ("malformed");
- an .ember file of format version 0 is called invalid, not "newer";
- two .ember files concatenated (compressed, plain, or a plain one after a
  compressed one, which gzip's rules would ignore) are called that, exit 65.
"""
import gzip
import os
import resource
import subprocess
import time
import emberlib as E

chk = E.Checker("e2e.hostile_inputs")
d = E.tmpdir()
LIMIT_S = 2.0


def run(args, stdin=None, preexec_fn=None, timeout=60):
    cmd = [E.ember()] + [str(a) for a in args]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=stdin if stdin is not None else subprocess.DEVNULL, capture_output=True,
                           preexec_fn=preexec_fn, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or b"", e.stderr or b""
    elapsed = time.monotonic() - t0
    err = err.decode(errors="replace")
    lines = [l for l in err.splitlines() if l.strip()]
    print("$ %s\nexit %s after %.2f s\n%s" % (" ".join(cmd), rc, elapsed, err), flush=True)
    return rc, out.decode(errors="replace"), lines, elapsed


def refused(args, what, word, stdin=None, limit=LIMIT_S):
    """args fail with exit 65 and one line holding word, within limit seconds."""
    rc, _, lines, took = run(args, stdin=stdin, timeout=10)
    chk.check(rc == 65 and len(lines) == 1 and word in lines[0] and took < limit,
              "%s: exit 65 in %.2f s (< %.0f s), one line with %r" % (what, took, limit, word),
              "exit %s, %d line(s): %s" % (rc, len(lines), lines[:3]))


good = os.path.join(d, "good.folded")
with open(good, "w") as f:
    f.write("main;a 3\nmain;b 2\n")

# Random bytes: a 50 MB file, /dev/urandom (endless), through a pipe, in diff.
rnd = os.path.join(d, "random.bin")
with open(rnd, "wb") as f:
    for _ in range(50):
        f.write(os.urandom(1 << 20))
BINARY = "not folded stacks: binary data"
refused(["report", rnd], "report of 50 MB of random bytes", BINARY)
refused(["convert", rnd, "-o", os.path.join(d, "r.svg")], "convert of 50 MB of random bytes", BINARY)
refused(["report", "/dev/urandom"], "report /dev/urandom", BINARY)
refused(["convert", "/dev/urandom", "-o", os.path.join(d, "u.folded")], "convert /dev/urandom", BINARY)
refused(["diff", good, "/dev/urandom", "-o", os.path.join(d, "d.folded")], "diff FILE /dev/urandom", BINARY)
refused(["diff", rnd, good, "-o", os.path.join(d, "d.folded")], "diff RANDOM FILE", BINARY)
with open("/dev/urandom", "rb") as src:
    refused(["report", "-"], "report - < /dev/urandom", BINARY, stdin=src)
chk.check(not os.path.exists(os.path.join(d, "r.svg")), "no output written for random bytes")

# Text that is not folded stacks: judged on its first 1,000 lines.
b64 = os.path.join(d, "b64.txt")
with open(b64, "wb") as f:
    import base64
    f.write(base64.encodebytes(os.urandom(3 << 20)))
refused(["report", b64], "report of base64 text", "1000 of its first 1000 lines have no sample count")

# A real file with a few bad lines still reads, with a warning.
few = os.path.join(d, "few.folded")
with open(few, "w") as f:
    f.write("# header\nnot a stack line\nanother one\n")
    for i in range(40):
        f.write("main;f%d %d\n" % (i, i + 1))
rc, out, lines, _ = run(["report", few])
chk.check(rc == 0 and "samples: 820" in out and any("skipped 2 line(s)" in l for l in lines),
          "a folded file with 2 bad lines of 42: read, 820 samples, a warning", "exit %s: %s" % (rc, lines))

# CR-only line ends: every line kept, the warning names them.
cr = os.path.join(d, "cr.folded")
with open(cr, "wb") as f:
    f.write(b"a;b 3\ra;c 2\r")
for args, what in ((["report", cr], "report FILE"), (["report", "-"], "report -")):
    rc, out, lines, _ = run(args, stdin=open(cr, "rb") if args[1] == "-" else None)
    chk.check(rc == 0 and "samples: 5" in out, "CR-only line ends, %s: all 5 samples" % what, out[:300])
    chk.check(any("2 line(s) ended in a CR alone" in l for l in lines) and not any("CR LF" in l for l in lines),
              "CR-only line ends, %s: the warning says CR alone, not CR LF" % what, "\n".join(lines))
conv = os.path.join(d, "cr_out.folded")
rc, _, _, _ = run(["convert", "-q", cr, "-o", conv])
chk.check(rc == 0 and sorted(open(conv).read().split("\n")) == ["", "a;b 3", "a;c 2"],
          "convert of CR-only lines writes both stacks", open(conv).read() if os.path.exists(conv) else "")
mixed = os.path.join(d, "mixed.folded")
with open(mixed, "wb") as f:
    f.write(b"a;b 1\r\na;c 2\ra;d 4\n")
rc, out, lines, _ = run(["report", mixed])
chk.check(rc == 0 and "samples: 7" in out and any("1 line(s) ended in a CR alone" in l for l in lines) and
          any("1 line(s) ended in CR LF" in l for l in lines),
          "CR LF, lone CR and LF in one file: 7 samples, each kind counted", "\n".join(lines))

# Out of memory while reading: exit 70, "out of memory".  A sanitizer
# build reserves terabytes of address space: the limit cannot apply there.
asan = b"__asan_init" in open(E.ember(), "rb").read()
if asan:
    print("skipped: out-of-memory case (sanitizer build)")
else:
    big = os.path.join(d, "distinct.folded")
    with open(big, "w") as f:
        f.write("".join("main;function_number_%08d 1\n" % i for i in range(600000)))

    def small_as():
        resource.setrlimit(resource.RLIMIT_AS, (96 << 20, 96 << 20))
    for src, what in ((big, "FILE"), ("-", "a pipe")):
        rc, _, lines, _ = run(["report", src], stdin=open(big, "rb") if src == "-" else None, preexec_fn=small_as)
        chk.check(rc == 70 and len(lines) == 1 and "out of memory while reading" in lines[0],
                  "RLIMIT_AS of 96 MiB, 600,000 distinct frames from %s: exit 70, one line 'out of memory'" % what,
                  "exit %s: %s" % (rc, lines))

# .ember: version 0, and two profiles concatenated.
ember_file = os.path.join(d, "good.ember")
rc, _, _, _ = run(["convert", "-q", good, "-o", ember_file])
content = gzip.decompress(open(ember_file, "rb").read())
chk.check(rc == 0 and content[:8] == b"EMBRPROF" and content[8] >= 1, "an .ember file to start from")
v0 = os.path.join(d, "v0.ember")
with open(v0, "wb") as f:
    f.write(gzip.compress(content[:8] + b"\x00" + content[9:]))
rc, _, lines, _ = run(["report", v0])
chk.check(rc == 65 and len(lines) == 1 and "format version 0" in lines[0] and "newer" not in lines[0],
          "version 0: exit 65, one line saying version 0, not 'newer'", "exit %s: %s" % (rc, lines))
two = os.path.join(d, "two.ember")
with open(two, "wb") as f:
    f.write(open(ember_file, "rb").read() * 2)
two_plain = os.path.join(d, "two_plain.ember")
with open(two_plain, "wb") as f:
    f.write(content * 2)
# gzip ignores what follows its last member: a plain profile there would
# be dropped without a word.
gz_plain = os.path.join(d, "gz_plain.ember")
with open(gz_plain, "wb") as f:
    f.write(open(ember_file, "rb").read() + content)
for path, what in ((two, "gzip members"), (two_plain, "uncompressed"), (gz_plain, "compressed then plain")):
    for args in (["report", path], ["diff", path, good, "-o", os.path.join(d, "d2.folded")]):
        rc, _, lines, _ = run(args)
        chk.check(rc == 65 and len(lines) == 1 and ".ember profiles concatenated" in lines[0],
                  "two .ember files concatenated (%s), %s: exit 65, said as such" % (what, args[0]),
                  "exit %s: %s" % (rc, lines))

chk.finish()
