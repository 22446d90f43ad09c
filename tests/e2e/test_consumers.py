"""consumers: what `ember record` writes for a real program loads in the tools
users open it with, and says the same thing in each of them.

One run of `chain` (main -> a -> b -> hot, ~90% in hot), written as every
format at once; then:
- pstats: `pstats.Stats` on every installed Python (pyenv 2.7, 3.6-3.13 and
  /usr/bin/python3) prints it, and `hot`'s cumulative time is >= 85% of the total;
- speedscope: valid under the schema shipped in the speedscope npm package;
- pprof: `go tool pprof -top` reads it and shows hot's share >= 85%;
- Chrome trace: valid JSON, B/E balanced per thread, a thread_name event;
- SVG: well-formed XML with the sample total (tests/exporters/check_svg.py);
- folded and .ember agree on the sample total.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTERS = os.path.join(HERE, "..", "exporters")

chk = E.Checker("e2e.consumers")
d = E.tmpdir()
out = {ext: os.path.join(d, "chain" + ext) for ext in
       (".folded", ".svg", ".prof", ".speedscope.json", ".pb.gz", ".trace.json", ".ember")}
res = E.record(sum([["-o", p] for p in out.values()], []), [E.target("chain"), "1.5"])
chk.check(res.rc == 0, "record to every format exits 0", res.describe())
prof = E.load_profile(chk, out[".folded"], res)
total = prof.total
hot = prof.count(lambda f: "hot" in f)
chk.check(total > 20 and hot >= 0.85 * total, "folded: hot in >= 85%% of %d samples" % total)

# pstats on every interpreter
pythons = sorted(glob.glob("/root/.pyenv/versions/*/bin/python"))
try:
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    if root:
        pythons = sorted(set(pythons) | set(glob.glob(os.path.join(root, "versions/*/bin/python"))))
except OSError:
    pass
pythons.append("/usr/bin/python3")
script = r'''
import pstats, sys
s = pstats.Stats(sys.argv[1])
s.sort_stats("cumulative").print_stats(5)
total = sum(v[2] for v in s.stats.values())
hot = max(v[3] for k, v in s.stats.items() if k[2] in ("<hot>", "hot"))
print("SHARE %.4f" % (hot / total))
'''
for py in pythons:
    if not os.path.exists(py):
        continue
    r = E.run([py, "-c", script, out[".prof"]], quiet=True)
    m = re.search(r"SHARE ([\d.]+)", r.stdout)
    chk.check(r.rc == 0 and m and float(m.group(1)) >= 0.85,
              "pstats under %s: loads, hot's cumulative share %s" % (py, m.group(1) if m else "?"),
              r.stderr[-2000:])

# speedscope schema
node = shutil.which("node")
validator = os.path.join(EXPORTERS, "validate_speedscope.js")
if node and os.path.isdir(os.path.join(EXPORTERS, "node_modules")):
    r = E.run([node, validator, out[".speedscope.json"]], quiet=True)
    chk.check(r.rc == 0, "speedscope file valid under the npm package's schema", r.stdout + r.stderr)
else:
    chk.check(False, "node and tests/exporters/node_modules present (the install step runs npm ci)")

# pprof through go tool pprof
go = shutil.which("go")
if go:
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "gocache"), GOFLAGS="-mod=mod")
    r = E.run([go, "tool", "pprof", "-top", "-sample_index=samples", out[".pb.gz"]], env=env, quiet=True)
    m = re.search(r"^\s*\S+\s+\S+%\s+\S+%\s+(\S+)\s+([\d.]+)%\s+hot\b", r.stdout, re.M)
    chk.check(r.rc == 0 and m is not None and float(m.group(2)) >= 85,
              "go tool pprof reads it and hot's cumulative share is >= 85%", r.stdout[-3000:] + r.stderr[-1000:])
else:
    chk.check(False, "go is installed (golang-go, from the install step)")

# Chrome trace
try:
    trace = json.load(open(out[".trace.json"], encoding="utf-8"))
    events = trace["traceEvents"]
    depth = {}
    ok = True
    for ev in events:
        key = (ev.get("pid"), ev.get("tid"))
        if ev["ph"] == "B":
            depth[key] = depth.get(key, 0) + 1
        elif ev["ph"] == "E":
            depth[key] = depth.get(key, 0) - 1
            ok &= depth[key] >= 0
    chk.check(ok and all(v == 0 for v in depth.values()), "Chrome trace: B/E balanced per thread")
    chk.check(any(ev["ph"] == "M" and ev.get("name") == "thread_name" for ev in events),
              "Chrome trace: thread_name metadata present")
except (ValueError, KeyError) as e:
    chk.check(False, "Chrome trace parses: %s" % e)

# SVG
r = E.run([sys.executable, os.path.join(EXPORTERS, "check_svg.py"), out[".svg"], "--total", str(total)], quiet=True)
chk.check(r.rc == 0, "SVG: well-formed, frames consistent, total %d" % total, r.stdout[-3000:] + r.stderr)

# .ember agrees
r = E.run([E.ember(), "report", out[".ember"]], quiet=True)
m = re.search(r"samples: (\d+)", r.stdout)
chk.check(r.rc == 0 and m and int(m.group(1)) == total, ".ember holds the same %d samples" % total, r.stdout)
chk.finish()
