"""Deep stacks: one folded line of 100,000 frames through every writer,
`report` and `diff`, and one of 2,000,000 frames through the writers that
keep no tree (folded, pstats, pprof, .ember) and `report`.

A writer that recursed once per frame died on its C stack at about 50,000
frames (sooner under the sanitizers), leaving every -o file empty; one whose
cost grew with the square of the depth would take minutes here.  Each
command must exit 0 within TIME_LIMIT seconds (the 100,000-frame commands
take well under a second on a 2-core machine, under the sanitizers too; the
limit only leaves room for a loaded machine) and write output that its
consumer's parser reads, with the deepest frame in it.
"""
import gzip
import json
import marshal
import os
import xml.etree.ElementTree as ET
import emberlib as E

TIME_LIMIT = 10.0
DEPTH = 100000
HUGE = 2000000
DEEPEST = "deepest_frame"

chk = E.Checker("e2e.deep_stacks")
d = E.tmpdir()


def deep_line(depth, count):
    # names repeat (as a deep recursion's do) and the leaf is unique
    return ";".join("f%d" % (i % 500) for i in range(depth - 1)) + ";%s %d\n" % (DEEPEST, count)


def write(name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def timed(what, cmd):
    res = E.run(cmd, timeout=120)
    chk.check(res.rc == 0, "%s exits 0" % what, res.describe())
    chk.check(res.elapsed < TIME_LIMIT, "%s takes %.2f s (limit %.0f s)" % (what, res.elapsed, TIME_LIMIT))
    return res


def written(path):
    return chk.check(os.path.exists(path) and os.path.getsize(path) > 0, "%s written, not empty" %
                     os.path.basename(path))


def check_svg(path, frames):
    if not written(path):
        return
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        chk.check(False, "%s parses as XML (%s)" % (os.path.basename(path), e))
        return
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    chk.check(any(t.startswith(DEEPEST + " (") for t in titles),
              "%s has a frame for the deepest function" % os.path.basename(path))
    group = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id") == "frames"]
    n = len(list(group[0])) if group else -1
    chk.check(n == frames, "%s draws %d frames (got %d)" % (os.path.basename(path), frames, n))


def check_folded(path, depth, count):
    if not written(path):
        return
    lines = open(path).read().splitlines()
    deep = [l for l in lines if (";%s " % DEEPEST) in l]
    ok = len(deep) == 1 and deep[0].rsplit(" ", 1)[1] == str(count) and deep[0].count(";") == depth - 1
    chk.check(ok, "%s keeps the %d-frame line with its count" % (os.path.basename(path), depth))


def check_pstats(path, count):
    if not written(path):
        return
    with open(path, "rb") as f:
        stats = marshal.load(f)
    leaf = [v for k, v in stats.items() if k[2] == "<%s>" % DEEPEST or k[2] == DEEPEST]
    # (calls, primitive calls, self time, cumulative time, callers)
    chk.check(len(leaf) == 1 and leaf[0][2] > 0 and len(leaf[0][4]) == 1,
              "%s has the deepest function with self time and its one caller" % os.path.basename(path))


def check_pprof(path):
    if not written(path):
        return
    data = gzip.open(path).read()
    chk.check(DEEPEST.encode() in data, "%s gunzips and names the deepest function" % os.path.basename(path))


small = "main;other 3\n"
base = write("in_base.folded", deep_line(DEPTH, 5) + small)
new = write("in_new.folded", deep_line(DEPTH, 9) + small)

# 100,000 frames: every format
for ext in ("svg", "folded", "prof", "speedscope.json", "pb.gz", "trace.json", "ember"):
    out = os.path.join(d, "deep." + ext)
    timed("convert 100,000 frames -> .%s" % ext, [E.ember(), "convert", "-q", base, "-o", out])
check_svg(os.path.join(d, "deep.svg"), 1 + DEPTH + 2)
check_folded(os.path.join(d, "deep.folded"), DEPTH, 5)
check_pstats(os.path.join(d, "deep.prof"), 5)
check_pprof(os.path.join(d, "deep.pb.gz"))

path = os.path.join(d, "deep.speedscope.json")
if written(path):
    doc = json.load(open(path))
    names = [f["name"] for f in doc["shared"]["frames"]]
    stacks = [s for p in doc["profiles"] for s in p["samples"]]
    chk.check(DEEPEST in names and max(len(s) for s in stacks) == DEPTH,
              "speedscope file has the deepest frame and a %d-frame sample" % DEPTH)

path = os.path.join(d, "deep.trace.json")
if written(path):
    events = json.load(open(path))["traceEvents"]
    opened = sum(1 for e in events if e["ph"] == "B")
    closed = sum(1 for e in events if e["ph"] == "E")
    chk.check(opened == closed == DEPTH + 2 and any(e.get("name") == DEEPEST for e in events),
              "Chrome trace opens and closes every frame (%d B, %d E events)" % (opened, closed))

back = os.path.join(d, "back.folded")
timed("convert the .ember file back to folded", [E.ember(), "convert", "-q", os.path.join(d, "deep.ember"),
                                                  "-o", back])
if written(back):
    chk.check(open(back).read() == open(os.path.join(d, "deep.folded")).read(),
              "the .ember file keeps the deep stack (folded output equal)")

res = timed("report on 100,000 frames", [E.ember(), "report", base, "--top", "5"])
chk.check(DEEPEST in res.stdout and "62.5%" in res.stdout,
          "report shows the deepest function with 5 of 8 samples", res.stdout[:2000])

outs = [os.path.join(d, "diff." + ext) for ext in ("svg", "folded", "pb.gz", "csv")]
res = timed("diff of two 100,000-frame profiles", [E.ember(), "diff", "-q", base, new] +
            sum([["-o", o] for o in outs], []))
check_svg(outs[0], 1 + DEPTH + 2)
written(outs[2])
if written(outs[1]):
    deep = [l for l in open(outs[1]).read().splitlines() if (";%s " % DEEPEST) in l]
    chk.check(len(deep) == 1 and deep[0].count(";") == DEPTH - 1,
              "two-column folded diff keeps the %d-frame line" % DEPTH)
if written(outs[3]):
    chk.check(('"%s"' % DEEPEST) in open(outs[3]).read(), "the delta table lists the deepest function")

# 2,000,000 frames: the writers without a tree, and report
huge = write("in_huge.folded", deep_line(HUGE, 7) + small)
for ext in ("folded", "prof", "pb.gz", "ember"):
    timed("convert 2,000,000 frames -> .%s" % ext,
          [E.ember(), "convert", "-q", huge, "-o", os.path.join(d, "huge." + ext)])
check_folded(os.path.join(d, "huge.folded"), HUGE, 7)
check_pstats(os.path.join(d, "huge.prof"), 7)
check_pprof(os.path.join(d, "huge.pb.gz"))
written(os.path.join(d, "huge.ember"))
res = timed("report on 2,000,000 frames", [E.ember(), "report", huge, "--top", "3"])
chk.check(DEEPEST in res.stdout and "70.0%" in res.stdout,
          "report shows the deepest function with 7 of 10 samples", res.stdout[:2000])

chk.finish()
