"""convert / report: the cold path on its own.

- `record -o x.ember -o x.folded`, then `convert x.ember -o y.folded`: the same
  folded text (the .ember file is lossless), and `-o` in every format works;
- `record` without -o writes PROG-PID.svg and PROG-PID.ember and says so;
- `report` prints the top table from .ember and from folded input, with
  --by module / line and --top;
- bad input: empty, missing, not folded, corrupt or truncated .ember, a newer
  format version -> one clear line naming the file, exit 65/66, no output;
- tolerant folded input (CRLF, fractional and two-column counts) converts,
  and each accommodation is reported.
"""
import gzip
import os
import re
import emberlib as E

chk = E.Checker("e2e.convert_report")
d = E.tmpdir()
ember_file = os.path.join(d, "chain.ember")
folded = os.path.join(d, "chain.folded")
res = E.record(["--threads", "-o", ember_file, "-o", folded], [E.target("chain"), "1"])
chk.check(res.rc == 0, "record exits 0", res.describe())

again = os.path.join(d, "again.folded")
res = E.run([E.ember(), "convert", "--threads", ember_file, "-o", again])
chk.check(res.rc == 0, "convert .ember -> folded exits 0", res.describe())
same = os.path.exists(again) and open(folded, "rb").read() == open(again, "rb").read()
chk.check(same, "folded from the .ember file equals the folded file written by record")

outs = {ext: os.path.join(d, "all" + ext) for ext in
        (".svg", ".prof", ".speedscope.json", ".pb.gz", ".trace.json", ".ember", ".txt")}
res = E.run([E.ember(), "convert", ember_file] + sum([["-o", p] for p in outs.values()], []))
chk.check(res.rc == 0, "convert to every format exits 0", res.describe())
for ext, p in outs.items():
    chk.check(os.path.exists(p) and os.path.getsize(p) > 0, "%s written and not empty" % ext)
    chk.check(("wrote " + p) in res.stderr, "convert says it wrote %s" % ext)

# record's default outputs
res = E.run([E.ember(), "record", "--", E.target("chain"), "0.5"], cwd=d)
chk.check(res.rc == 0, "record without -o exits 0", res.describe())
m = re.search(r"wrote (\S*chain-(\d+)\.svg)", res.stderr)
chk.check(m is not None, "record without -o names the SVG it wrote")
if m:
    pid = m.group(2)
    for ext in ("svg", "ember"):
        chk.check(os.path.exists(os.path.join(d, "chain-%s.%s" % (pid, ext))), "chain-PID.%s exists" % ext)

# report
for src in (ember_file, folded):
    res = E.run([E.ember(), "report", src, "--top", "10"])
    chk.check(res.rc == 0 and "hot" in res.stdout and "by self" in res.stdout and "by total" in res.stdout,
              "report %s shows the top tables with hot" % os.path.basename(src), res.describe())
res = E.run([E.ember(), "report", ember_file, "--by", "module"])
chk.check(res.rc == 0 and "chain" in res.stdout, "report --by module names the chain binary", res.describe())
res = E.run([E.ember(), "report", ember_file, "--by", "line"])
chk.check(res.rc == 0 and re.search(r"hot \(\S*chain\.c:\d+\)", res.stdout) is not None,
          "report --by line shows hot with its file:line", res.describe())
res = E.run([E.ember(), "report", ember_file, "--by", "nonsense"])
chk.check(res.rc == 64, "report --by nonsense exits 64 (got %s)" % res.rc)


# bad input
def bad(name, content, want_rc, want_text):
    path = os.path.join(d, name)
    if content is not None:
        with open(path, "wb") as f:
            f.write(content)
    out = os.path.join(d, "bad-out.svg")
    if os.path.exists(out):
        os.unlink(out)
    r = E.run([E.ember(), "convert", path, "-o", out])
    lines = r.stderr_lines()
    chk.check(r.rc == want_rc, "%s: exit %d (got %s)" % (name, want_rc, r.rc), r.describe())
    chk.check(len(lines) == 1 and lines[0].startswith("ember: ") and name in lines[0] and want_text in lines[0],
              "%s: one line naming the file and saying '%s'" % (name, want_text), r.stderr)
    chk.check(not os.path.exists(out) or os.path.getsize(out) == 0, "%s: no output written" % name)


raw = gzip.open(ember_file).read()
bad("empty.folded", b"", 65, "empty")
bad("missing.folded", None, 66, "No such file")
bad("prose.txt", b"this is not\na profile\n", 65, "not folded stacks")
bad("cut.ember", open(ember_file, "rb").read()[:200], 65, "truncated")
bad("short.ember", gzip.compress(raw[: len(raw) // 2]), 65, "truncated")
newer = bytearray(raw)
newer[8] = 7
bad("newer.ember", gzip.compress(bytes(newer)), 65, "newer")

tolerant = os.path.join(d, "tolerant.folded")
with open(tolerant, "wb") as f:
    f.write(b"main;a;b 3\r\nmain;a 2.5\r\nmain;c 1 4\r\nno count\r\n")
out = os.path.join(d, "tolerant.folded.out.folded")
res = E.run([E.ember(), "convert", tolerant, "-o", out])
chk.check(res.rc == 0, "tolerant folded input converts", res.describe())
for word in ("CR LF", "fractional", "differential", "skipped"):
    chk.check(word in res.stderr, "convert reports '%s'" % word, res.stderr)
text = open(out).read() if os.path.exists(out) else ""
chk.check(text == "main;a 3\nmain;a;b 3\nmain;c 4\n", "tolerant input read as expected", text)
chk.finish()
