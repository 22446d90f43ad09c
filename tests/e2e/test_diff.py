"""diff: `ember diff BASE NEW` on folded files with known changes, and on two
recorded runs of `chain`.

Hand-made folded pair (NEW has twice the samples, so shares are what moved):
    grow 20% -> 40%, shrink 40% -> 20%, steady 29% -> 29%, gone 10% -> 0,
    fresh 0 -> 9.95%, jitter 1% -> 1.05% (inside the binomial noise)
- the terminal table ranks grow, shrink, gone, fresh by |delta inclusive|,
  marks jitter as noise, states the normalisation and both totals;
- .csv and .md parse and agree with each other and with the numbers above;
  the .csv is data only (header row first, every row complete, numbers that
  parse; pandas reads it when installed), its runs and normalisation are in
  the .md/.txt header and the `wrote` line; .txt is the table (not folded
  stacks);
- .folded is two-column `stack BASE NEW`, BASE put on NEW's scale;
- .pb.gz decodes: NEW samples positive, BASE samples negative and labelled
  pprof::base=true; `go tool pprof -top` reads it when Go is installed;
- .svg is valid XML; grow's frame is red, shrink's blue; --reverse-view shows
  the vanished `gone` (blue) instead of `fresh`;
- absolute seconds, per iteration; --rename makes two kernels one key;
- the noise test follows the normalisation: steady 1000 -> 1010 samples
  while drop goes 500 -> 100 is noise in absolute seconds (Poisson test on
  counts, z = 0.22) but a real change of share (two-proportion test,
  z = 16.3); at the threshold, Poisson z = 1 and 1.9 are noise, 2.1 and 3
  are not, also with NEW at twice BASE's iterations (r = 2);
  --by line; a two-column input compares its own columns;
- bad input: mismatched kinds warn and still write; missing 66, empty 65,
  usage 64, unwritable output 73.
Recorded: chain 0.6 s at 99 Hz vs chain 1.2 s at 199 Hz: the rates differ,
which is said on stderr and in the outputs, and in absolute seconds hot grew
by about 0.6 s.
"""
import csv
import gzip
import io
import os
import re
import shutil
import sys
import xml.dom.minidom
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "exporters"))
import check_pprof  # noqa: E402  (the standard-library pprof decoder)

chk = E.Checker("e2e.diff")
d = E.tmpdir()


def write(name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def ember_diff(*args, **kw):
    return E.run([E.ember(), "diff"] + [str(a) for a in args], **kw)


CSV_COLUMNS = ("key,status,noise,unit,self_base,self_new,self_delta,incl_base,incl_new,incl_delta,ratio,"
               "self_share_base_pct,self_share_new_pct,incl_share_base_pct,incl_share_new_pct,incl_share_delta_pp,"
               "incl_share_se_pp,self_base_samples,self_new_samples,incl_base_samples,incl_new_samples,"
               "noise_test,self_z,incl_z").split(",")
CSV_WORDS = {"key": None, "status": ("new", "removed", "changed"), "noise": ("yes", "no"),
             "unit": ("percent", "s", "s/iteration"), "noise_test": ("poisson_counts", "two_proportion_shares")}


def csv_problems(path):
    """What keeps a diff CSV from being plain data: a first line that is not
    the header, a row missing or adding a column, a number that does not parse."""
    text = open(path, newline="").read()
    problems = []
    if text.split("\n", 1)[0].rstrip("\r").split(",") != CSV_COLUMNS:
        problems.append("first line is not the header: %r" % text[:80])
    for i, r in enumerate(csv.DictReader(io.StringIO(text, newline=""))):
        if None in r or any(r.get(c) in (None, "") and c != "key" for c in CSV_COLUMNS):
            problems.append("row %d lacks or adds columns: %r" % (i + 2, r))
            continue
        for c in CSV_COLUMNS:
            if c in CSV_WORDS:
                if CSV_WORDS[c] and r[c] not in CSV_WORDS[c]:
                    problems.append("row %d: %s = %r" % (i + 2, c, r[c]))
            elif c.endswith("_samples"):
                if not r[c].isdigit():
                    problems.append("row %d: %s = %r is not a count" % (i + 2, c, r[c]))
            else:
                try:
                    float(r[c])
                except ValueError:
                    problems.append("row %d: %s = %r is not a number" % (i + 2, c, r[c]))
    return problems


def read_csv(path):
    """Rows of a diff CSV: {key: row dict}, and the rows in order."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {r["key"]: r for r in rows}, rows


def read_md(path):
    """Table rows of a diff .md: {key: [cells]}, and the header cells."""
    rows, header = {}, None
    for line in open(path).read().splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if header is None:
            header = cells
            continue
        key = cells[0].strip("`").strip().replace("\\|", "|")
        rows[key] = cells
    return rows, header


def fills(svg_path):
    """{frame name: fill} of the SVG's frames (first frame of each name)."""
    doc = xml.dom.minidom.parse(svg_path)
    frames = [g for g in doc.getElementsByTagName("g") if g.getAttribute("id") == "frames"][0]
    out = {}
    for g in frames.getElementsByTagName("g"):
        title = g.getElementsByTagName("title")[0].firstChild.data
        name = title[:title.rfind(" (")]
        out.setdefault(name, (g.getElementsByTagName("rect")[0].getAttribute("fill"), title))
    return out


def rgb(fill):
    return tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))


BASE = write("base.folded", "main;work;grow 2000\nmain;work;shrink 4000\nmain;work;steady 2900\n"
                            "main;gone 1000\nmain;jitter 100\n")
NEW = write("new.folded", "main;work;grow 8000\nmain;work;shrink 4000\nmain;work;steady 5800\n"
                          "main;fresh 1990\nmain;jitter 210\n")

# ---- the terminal table
res = ember_diff(BASE, NEW)
chk.check(res.rc == 0, "diff of two folded files exits 0", res.describe())
rows = [l for l in res.stdout.splitlines() if not l.startswith("ember:") and l.strip()]
names = [l.split()[-1] for l in rows[1:]]
chk.check(names[:4] == ["grow", "shrink", "gone", "fresh"], "table ranks grow, shrink, gone, fresh first: %r" % names,
          res.stdout)
jit = [l for l in rows if l.endswith(" jitter")]
chk.check(jit and " noise " in jit[0] and "+0.05pp" in jit[0], "jitter (+0.05 pp) is marked noise", res.stdout)
grow = [l for l in rows if l.endswith(" grow")]
chk.check(grow and "+20.00pp" in grow[0] and "2.00x" in grow[0] and "noise" not in grow[0],
          "grow: +20.00 pp, ratio 2.00x, not noise", res.stdout)
chk.check("normalization: share" in res.stdout and "10,000 samples" in res.stdout and "20,000 samples" in res.stdout,
          "the table states the normalisation and both totals", res.stdout)
gone = [l for l in rows if l.endswith(" gone")]
fresh = [l for l in rows if l.endswith(" fresh")]
chk.check(gone and " removed " in gone[0] and fresh and " new " in fresh[0], "gone is removed, fresh is new")

res = ember_diff(BASE, NEW, "--top", "2", "--sort", "self")
rows = [l for l in res.stdout.splitlines() if not l.startswith("ember:") and l.strip()]
chk.check(res.rc == 0 and len(rows) == 3 and "top 2 of 8" in res.stdout, "--top 2 prints two rows", res.stdout)

# ---- every output format
outs = {ext: os.path.join(d, "d" + ext) for ext in (".csv", ".md", ".txt", ".folded", ".pb.gz", ".svg")}
res = ember_diff(BASE, NEW, *sum([["-o", p] for p in outs.values()], []))
chk.check(res.rc == 0, "diff -o in every format exits 0", res.describe())
for ext, p in outs.items():
    chk.check(os.path.exists(p) and os.path.getsize(p) > 0 and ("wrote " + p) in res.stderr,
              "%s written and reported" % ext)

problems = csv_problems(outs[".csv"])
chk.check(not problems, "the CSV is plain data: header first, every row complete, numbers parse", "\n".join(problems))
table, csv_rows = read_csv(outs[".csv"])
chk.check(re.search(r"wrote \S+d\.csv \(delta table, CSV; share of each run's samples \(BASE 10,000, NEW 20,000 = "
                    r"100%\); noise: two-proportion test on shares, \|z\| <= 2\)", res.stderr),
          "stderr says what the CSV holds: normalisation, totals, noise test", res.stderr)
try:
    import pandas
except ImportError:
    pandas = None
    print("SKIP (check): pandas not installed: the CSV not read with pandas.read_csv", flush=True)
if pandas:
    frame = pandas.read_csv(outs[".csv"])
    numeric = [c for c in CSV_COLUMNS if c not in CSV_WORDS]
    chk.check(list(frame.columns) == CSV_COLUMNS and len(frame) == len(csv_rows)
              and all(pandas.api.types.is_numeric_dtype(frame[c]) for c in numeric),
              "pandas.read_csv: every column, every row, numeric columns numeric", repr(frame.dtypes))
chk.check([r["key"] for r in csv_rows[:4]] == ["grow", "shrink", "gone", "fresh"], "CSV is in table order")
g = table.get("grow", {})
chk.check(g and float(g["incl_base"]) == 20 and float(g["incl_new"]) == 40 and float(g["incl_delta"]) == 20
          and g["unit"] == "percent" and g["status"] == "changed" and g["noise"] == "no"
          and g["incl_base_samples"] == "2000" and g["incl_new_samples"] == "8000", "CSV grow row: %r" % g)
chk.check(table.get("jitter", {}).get("noise") == "yes", "CSV marks jitter as noise")
chk.check(table.get("fresh", {}).get("status") == "new" and table.get("fresh", {}).get("ratio") == "inf"
          and table.get("gone", {}).get("status") == "removed", "CSV statuses and ratios of new/removed")
se = float(table.get("jitter", {}).get("incl_share_se_pp", "0"))
want = 100 * (0.01 * 0.99 / 10000 + 0.0105 * 0.9895 / 20000) ** 0.5
chk.check(abs(se - want) < 1e-6, "CSV standard error of jitter %.6f pp == %.6f" % (se, want))

md, header = read_md(outs[".md"])
chk.check(header is not None and header[0] == "function" and "ratio" in header, "Markdown table header: %r" % header)
agree = True
for key, r in table.items():
    cells = md.get(key)
    if not cells or header is None:
        agree = False
        break
    cell = dict(zip(header, cells))
    agree &= abs(float(cell["incl NEW"].rstrip("%")) - float(r["incl_new"])) < 0.006
    agree &= abs(float(cell["\u0394incl"].rstrip("p")) - float(r["incl_delta"])) < 0.006
    agree &= cell["status"] == r["status"] and (cell["noise"] == "noise") == (r["noise"] == "yes")
chk.check(agree and len(md) == len(table), "Markdown and CSV agree on every row (%d rows)" % len(md))
txt = open(outs[".txt"]).read()
chk.check(txt.startswith("BASE: ") and "normalization: share" in txt and re.search(r"^.*\s grow$", txt, re.M),
          ".txt is the delta table (not folded stacks)", txt[:400])
md_text = open(outs[".md"]).read()
for what, text in ((".md", md_text), (".txt", txt)):
    chk.check("10,000 samples" in text and "20,000 samples" in text and "normalization: share" in text
              and "noise: two-proportion test on shares, |z| <= 2" in text,
              "%s states both totals, the normalisation and the noise test" % what, text[:1200])

folded = open(outs[".folded"]).read()
chk.check(folded == "main;fresh 0 1990\nmain;gone 2000 0\nmain;jitter 200 210\nmain;work;grow 4000 8000\n"
                    "main;work;shrink 8000 4000\nmain;work;steady 5800 5800\n",
          ".folded is two-column, BASE on NEW's scale", folded)
chk.check("two-column folded" in res.stderr, "stderr names the two-column folded output")

# pprof: NEW positive, BASE negated with pprof::base=true
prof = check_pprof.decode_profile(gzip.decompress(open(outs[".pb.gz"], "rb").read()))
strings = [s.decode() for s in prof["strings"]]
pos = neg = 0
labelled = True
for s in prof["samples"]:
    labels = {strings[l[1]]: strings[l[2]] for l in s["labels"]}
    if s["values"][0] < 0:
        neg += s["values"][0]
        labelled &= labels.get("pprof::base") == "true"
    else:
        pos += s["values"][0]
        labelled &= "pprof::base" not in labels
    labelled &= s["values"][1] == s["values"][0] * prof["period"]
chk.check(pos == 20000 and neg == -20000, "pprof: NEW sums to 20000, BASE to -20000 (on NEW's scale): %d %d" % (pos, neg))
chk.check(labelled, "pprof: exactly the negative samples carry pprof::base=true; cpu = samples x period")
comments = [strings[i] for i in prof["comments"]]
chk.check(any(c.startswith("normalization: share") for c in comments) and any("pprof::base" in c for c in comments),
          "pprof comments state the normalisation and the base label: %r" % comments)
go = shutil.which("go")
if go:
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "gocache"), GOFLAGS="-mod=mod")
    r = E.run([go, "tool", "pprof", "-top", "-sample_index=samples", outs[".pb.gz"]], env=env, quiet=True)
    line = re.search(r"^\s*(-?\d+)\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+grow$", r.stdout, re.M)
    chk.check(r.rc == 0 and line is not None and int(line.group(1)) == 4000,
              "go tool pprof reads the diff: grow's flat is +4000 (8000 - 2 x 2000)", r.stdout[-2000:] + r.stderr[-800:])
else:
    print("SKIP (check): go not installed: pprof diff not loaded in go tool pprof", flush=True)

# SVG: colours
f = fills(outs[".svg"])
chk.check("grow" in f and rgb(f["grow"][0])[0] == 255 and rgb(f["grow"][0])[1] < 100, "grow is red: %r" % (f.get("grow"),))
chk.check("shrink" in f and rgb(f["shrink"][0])[2] == 255 and rgb(f["shrink"][0])[0] < 100,
          "shrink is blue: %r" % (f.get("shrink"),))
chk.check("steady" in f and f["steady"][0] == "#ffffff" and "jitter" in f and f["jitter"][0] == "#ffffff",
          "unchanged and within-noise frames are white")
chk.check("gone" not in f and "fresh" in f, "NEW widths: fresh shown, gone not")
chk.check("fresh" in f and "self 0.00% \u2192 9.95%" in f["fresh"][1] and "incl" in f["fresh"][1],
          "tooltip has self and inclusive in both runs: %r" % (f.get("fresh", ("", ""))[1],))
svg_text = open(outs[".svg"]).read()
chk.check("full colour \u00b120.00 pp (largest change)" in svg_text and "share of each run" in svg_text,
          "subtitle states the colour scale and the normalisation")
rev = os.path.join(d, "rev.svg")
res = ember_diff(BASE, NEW, "--reverse-view", "-o", rev)
f = fills(rev) if res.rc == 0 else {}
chk.check("gone" in f and rgb(f["gone"][0])[2] == 255 and rgb(f["gone"][0])[0] < 255 and "fresh" not in f,
          "--reverse-view: gone shown in blue, fresh not", res.describe())

# ---- absolute seconds, per iteration
p = os.path.join(d, "abs.csv")
res = ember_diff(BASE, NEW, "--normalize", "absolute", "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
g = table.get("grow", {})
chk.check(res.rc == 0 and g.get("unit") == "s" and abs(float(g.get("incl_delta", 0)) - 60) < 1e-6,
          "absolute: grow +60 s (10 ms per sample assumed)", res.describe())
chk.check("does not say its sampling rate" in res.stderr, "absolute with folded input warns that the rate is assumed")
res = ember_diff(BASE, NEW, "--iterations-base", "10", "--iterations-new", "20", "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
g = table.get("grow", {})
chk.check(res.rc == 0 and g.get("unit") == "s/iteration" and abs(float(g.get("incl_base", 0)) - 2) < 1e-9
          and abs(float(g.get("incl_new", 0)) - 4) < 1e-9, "per iteration: grow 2 s -> 4 s per iteration: %r" % g,
          res.describe())

# ---- the noise test follows the normalisation
# steady keeps its samples (1000 -> 1010) while drop loses 400 at the same
# (assumed) rate: in seconds steady did not change, in shares it grew from
# 66.7% to 91.0% of its run.
sb = write("steady_base.folded", "main;steady 1000\nmain;drop 500\n")
sn = write("steady_new.folded", "main;steady 1010\nmain;drop 100\n")
p, md_path = os.path.join(d, "noise.csv"), os.path.join(d, "noise.md")
res = ember_diff(sb, sn, "--normalize", "absolute", "-o", p, "-o", md_path)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
st, dr = table.get("steady", {}), table.get("drop", {})
chk.check(res.rc == 0 and st.get("noise") == "yes" and st.get("noise_test") == "poisson_counts"
          and abs(float(st.get("incl_z", "nan")) - 10 / 2010 ** 0.5) < 1e-6,
          "absolute: steady 1000 -> 1010 samples is noise (Poisson z = 10 / sqrt(2010) = 0.223): %r" % st,
          res.describe())
chk.check(dr.get("noise") == "no" and abs(float(dr.get("incl_z", "nan")) + 400 / 600 ** 0.5) < 1e-6,
          "absolute: drop 500 -> 100 changed (Poisson z = -400 / sqrt(600) = -16.3): %r" % dr)
rule = "noise: Poisson test on sample counts, |z| <= 2"
chk.check(rule in res.stdout and os.path.exists(md_path) and rule in open(md_path).read() and rule in res.stderr,
          "absolute: the table, the .md and the CSV's wrote line name the Poisson test", res.stdout + res.stderr)
res = ember_diff(sb, sn, "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
st, dr = table.get("steady", {}), table.get("drop", {})
pb, pn = 1000 / 1500, 1010 / 1110
z_share = (pn - pb) / (pb * (1 - pb) / 1500 + pn * (1 - pn) / 1110) ** 0.5
chk.check(res.rc == 0 and st.get("noise") == "no" and st.get("noise_test") == "two_proportion_shares"
          and abs(float(st.get("incl_z", "nan")) - z_share) < 1e-5 and dr.get("noise") == "no",
          "share: steady's share 66.7%% -> 91.0%% is a change (two-proportion z = %.2f): %r" % (z_share, st),
          res.describe())
chk.check("noise: two-proportion test on shares, |z| <= 2" in res.stdout, "share: the table names the share test",
          res.stdout)

# At the threshold: f has a samples in BASE, b in NEW (g the rest, which
# does not enter the count test).  r = 1 at equal rates; with NEW at twice
# BASE's iterations one NEW sample is half the seconds per iteration: r = 2.
cases = [(4950, 5050, 1, 1.0, "yes"), (4905, 5095, 1, 1.9, "yes"), (4895, 5105, 1, 2.1, "no"),
         (4850, 5150, 1, 3.0, "no"), (2000, 4100, 2, 100 / 110, "yes"), (2000, 4400, 2, 400 / 12400 ** 0.5, "no")]
for a, b, iters, z, noise in cases:
    tb = write("t_base.folded", "main;f %d\nmain;g 3000\n" % a)
    tn = write("t_new.folded", "main;f %d\nmain;g 7000\n" % b)
    res = ember_diff(tb, tn, "--iterations-base", 1, "--iterations-new", iters, "-o", p)
    f_row = (read_csv(p)[0] if res.rc == 0 else {}).get("f", {})
    chk.check(res.rc == 0 and f_row.get("noise") == noise and abs(float(f_row.get("incl_z", "nan")) - z) < 1e-6,
              "Poisson test: f %d -> %d samples, r = %d: z = %.3f, noise %s: %r" % (a, b, iters, z, noise, f_row),
              res.describe())

# ---- --rename, --by line
kb = write("kb.folded", "main;linear;sgemm_kernel_SKYLAKEX 600\nmain;other 400\n")
kn = write("kn.folded", "main;linear;fbgemm::PackAWithRowOffset<unsigned char, int>::pack 300\n"
                        "main;linear;fbgemm::ExecuteKernel::execute 100\nmain;other 400\n")
p = os.path.join(d, "ren.csv")
res = ember_diff(kb, kn, "--rename", "fbgemm::.*=GEMM", "--rename", "sgemm.*=GEMM", "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
g = table.get("GEMM", {})
chk.check(res.rc == 0 and g.get("status") == "changed" and g.get("self_base_samples") == "600"
          and g.get("self_new_samples") == "400" and not any("sgemm" in k or "fbgemm" in k for k in table),
          "--rename: the FP32 and INT8 kernels match as GEMM", res.describe())
chk.check("2 rename rule(s)" in res.stdout, "the table says renames were applied", res.stdout)
lb = write("lb.folded", "main (app.py:1);f (app.py:10) 50\nmain (app.py:1);g (app.py:30) 50\n")
ln = write("ln.folded", "main (app.py:2);f (app.py:20) 50\nmain (app.py:2);g (app.py:30) 50\n")
res = ember_diff(lb, ln, "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
chk.check(res.rc == 0 and set(table) == {"main (app.py)", "f (app.py)", "g (app.py)"}
          and all(r["status"] == "changed" for r in table.values()), "by function: moved lines still match: %r" % list(table))
res = ember_diff(lb, ln, "--by", "line", "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
chk.check(res.rc == 0 and table.get("f (app.py:10)", {}).get("status") == "removed"
          and table.get("f (app.py:20)", {}).get("status") == "new"
          and table.get("g (app.py:30)", {}).get("status") == "changed", "--by line: moved lines are new/removed: %r"
          % list(table))

# ---- addresses without a symbol compare per module, runs of them as one frame
ub = write("ub.folded", "main;[libx.so+0x10];[libx.so+0x24] 50\nmain;[libx.so+0x30] 50\nmain;work 100\n")
un = write("un.folded", "main;[libx.so+0x44] 20\nmain;work 180\n")
res = ember_diff(ub, un, "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
x = table.get("[libx.so]", {})
chk.check(res.rc == 0 and not any("+0x" in k for k in table) and x.get("incl_base_samples") == "100"
          and x.get("incl_new_samples") == "20" and x.get("status") == "changed",
          "unsymbolized addresses match as their module [libx.so]: %r" % list(table))
res = ember_diff(ub, un, "--by", "line", "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
chk.check(res.rc == 0 and "[libx.so+0x44]" in table, "--by line keeps the addresses")

# ---- a two-column input compares its own columns
res = ember_diff(outs[".folded"], outs[".folded"], "-o", p)
table, _ = read_csv(p) if res.rc == 0 else ({}, [])
g = table.get("grow", {})
chk.check(res.rc == 0 and abs(float(g.get("incl_delta", 0)) - 20) < 1e-9 and "two-column" in res.stderr,
          "two-column input: BASE = first column, NEW = last (grow +20 pp again)", res.describe())

# ---- mismatched kinds: a native-only BASE and a Python NEW
nb = write("native.folded", "_start;main;compute 100\n_start;main;io 50\n")
pn = write("python.folded", "<module> (app.py:1);compute (app.py:5) 100\n<module> (app.py:1);io (app.py:9) 20\n")
p = os.path.join(d, "kinds.svg")
res = ember_diff(nb, pn, "-o", p)
chk.check(res.rc == 0 and "warning" in res.stderr and "Python frames" in res.stderr and os.path.getsize(p) > 0,
          "mismatched kinds: a warning, and the output is still written", res.describe())

# ---- bad input
empty = write("empty.folded", "")
zero = write("zero.folded", "main;a 0\n")
prose = write("prose.txt", "this is not\na profile\n")


def bad(args, rc, text, what):
    r = ember_diff(*args)
    chk.check(r.rc == rc and text in r.stderr, "%s: exit %d and '%s'" % (what, rc, text), r.describe())


bad([BASE, os.path.join(d, "missing.folded")], 66, "missing.folded", "missing NEW")
bad([os.path.join(d, "missing.folded"), NEW], 66, "(BASE)", "missing BASE")
bad([empty, NEW], 65, "empty", "empty BASE")
bad([BASE, zero], 65, "no samples", "NEW with only zero counts")
bad([prose, NEW], 65, "prose.txt", "not a profile")
bad([], 64, "give two profiles", "no arguments")
bad([BASE], 64, "only one given", "one argument")
bad([BASE, NEW, NEW], 64, "exactly two", "three arguments")
bad([BASE, NEW, "--normalize", "percent"], 64, "--normalize", "bad --normalize")
bad([BASE, NEW, "-o", os.path.join(d, "x.prof")], 64, "cannot tell the format", "unknown output extension")
bad([BASE, NEW, "--rename", "(oops=x"], 64, "bad regular expression", "bad --rename regex")
bad([BASE, NEW, "--rename", "noequals"], 64, "REGEX=REPLACEMENT", "--rename without '='")
bad([BASE, NEW, "--iterations-base", "10"], 64, "give both", "one --iterations")
bad([BASE, NEW, "--iterations-base", "1", "--iterations-new", "1", "--normalize", "share"], 64, "not with",
    "--iterations with --normalize share")
bad([BASE, NEW, "--threads"], 64, "threads", "--threads")
bad([BASE, NEW, "--sort", "size"], 64, "--sort", "bad --sort")
bad([BASE, NEW, "-o", "/nonexistent-dir/d.svg"], 73, "cannot write", "unwritable output")
r = ember_diff("--help")
chk.check(r.rc == 0 and "Exit status" in r.stdout and "--rename" in r.stdout, "diff --help shows options and exit codes")
r = E.run([E.ember(), "--help"])
chk.check("diff" in r.stdout, "ember --help lists diff")

# ---- two recorded runs at different rates
rb, rn = os.path.join(d, "short.ember"), os.path.join(d, "long.ember")
r1 = E.record(["-F", "99", "-o", rb], [E.target("chain"), "0.6"])
r2 = E.record(["-F", "199", "-o", rn], [E.target("chain"), "1.2"])
if r1.rc == 77 or r2.rc == 77:
    print("SKIP (recorded part): no permission to sample here", flush=True)
else:
    chk.check(r1.rc == 0 and r2.rc == 0, "record chain 0.6 s at 99 Hz and 1.2 s at 199 Hz")
    p = os.path.join(d, "rec.csv")
    res = ember_diff(rb, rn, "--normalize", "absolute", "-o", p, "-o", os.path.join(d, "rec.svg"))
    table, _ = read_csv(p) if res.rc == 0 else ({}, [])
    chk.check(res.rc == 0 and "different rates" in res.stderr, "different rates: a warning line", res.describe())
    chk.check("sampling rates differ" in res.stdout and re.search(r"wrote \S+rec\.csv .*sampling rates differ", res.stderr),
              "different rates: said in the table and the CSV's wrote line too", res.stdout + res.stderr)
    h = table.get("hot", {})
    delta = float(h.get("incl_delta", "nan"))
    # cpu-clock samples on-CPU time: the truth is the CPU each run got (on a
    # loaded machine well below its wall time), as the target reports it.
    cpu1 = E.stdout_value(r1, "cpu_seconds") or 0.6
    cpu2 = E.stdout_value(r2, "cpu_seconds") or 1.2
    want = cpu2 - cpu1
    chk.check(h.get("status") == "changed" and abs(delta - want) <= 0.15 + 0.25 * abs(want),
              "absolute: hot grew by the CPU time the runs differ by (%.3f s, target says %.3f s)"
              % (delta, want), res.stdout)
    res = ember_diff(rb, rn)
    hot = [l for l in res.stdout.splitlines() if l.endswith(" hot")]
    chk.check(res.rc == 0 and hot, "share mode table has hot", res.stdout)
chk.finish()
