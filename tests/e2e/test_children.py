"""children: `ember record -- forks 50 MS`: a program that forks 50
children, one after another, each burning MS ms of its own CPU time in
child_work() and exiting (forks prints the CPU time of all of them:
cpu_seconds).

The kernel samples each task on its own clock, which starts at the task's
creation and runs apart on each CPU: a child shorter than a period (10.1 ms
at 99 Hz) is never sampled.  ember says how much CPU time that left out,
from what the kernel reports for each task as it ends.  Checked:

- -F 99, children of 7 ms: exit 0, the documented format; one line says
  how much CPU time is not in the profile (nearly all of it), and samples x period + that time accounts for the CPU time
  forks reports, within -15% / +10% (the launched process's own last
  partial period is not reported: a few ms);
- no line per child process (`cannot read /proc/N/maps`): at most one line
  for all the children that ended before ember looked for Python in them;
- -F 999 (1 ms periods), children of 10 ms: they are sampled, samples >=
  70% of 999 Hz x the CPU time, and unwound to their own function: >= 90%
  of the samples are in child_work, under main."""
import os
import re
import emberlib as E

chk = E.Checker("e2e.children")
d = E.tmpdir()
forks = E.target("forks")

UNSAMPLED_RE = re.compile(r"ember: ([0-9.]+) s of CPU time \(([0-9]+)%\) is not in the profile: the ([0-9]+) threads")


def run(freq, ms):
    out = os.path.join(d, "forks-%d.folded" % freq)
    res = E.record(["-F", str(freq), "-o", out], [forks, "50", str(ms)])
    chk.check(res.rc == 0, "-F %d: ember exits 0 (got %s)" % (freq, res.rc), res.describe())
    prof = E.load_profile(chk, out, res)
    E.check_format(chk, prof)
    per_child = [l for l in res.stderr_lines() if re.search(r"cannot read /proc/[0-9]+/maps", l)]
    chk.check(not per_child, "-F %d: no 'cannot read /proc/N/maps' line (found %d)" % (freq, len(per_child)),
              "\n".join(per_child[:5]))
    ended = [l for l in res.stderr_lines() if "ended before ember could look for a Python runtime" in l]
    chk.check(len(ended) <= 1, "-F %d: at most one line for the children that ended before ember looked "
              "at them (%d)" % (freq, len(ended)), "\n".join(ended))
    return res, prof


res, prof = run(99, 7)
cpu = E.stdout_value(res, "cpu_seconds")
summary = E.parse_summary(res.stderr)
m = UNSAMPLED_RE.search(res.stderr)
chk.check(m is not None, "the summary says how much CPU time is not in the profile", res.stderr)
if m and cpu and summary:
    period = 1.0 / 99
    accounted = (summary["samples"] + summary["lost"]) * period + float(m.group(1))
    chk.check(0.85 * cpu <= accounted <= 1.10 * cpu,
              "samples x period + unsampled = %.3f s accounts for the %.3f CPU s forks reports "
              "(%d samples, %s s unsampled)" % (accounted, cpu, summary["samples"], m.group(1)))
    chk.check(int(m.group(3)) >= 50, "the line counts the 50 children (%s)" % m.group(3))

res, prof = run(999, 10)
cpu = E.stdout_value(res, "cpu_seconds")
chk.check(cpu is not None and prof.total >= 0.7 * 999 * cpu,
          "-F 999: %d samples >= 70%% of 999 Hz x %s CPU s" % (prof.total, cpu), prof.top(5))
n = prof.count(lambda f: "child_work" in f)
under_main = prof.count(lambda f: "child_work" in f and "main" in f[:f.index("child_work")])
chk.check(prof.total > 0 and n >= 0.9 * prof.total and under_main == n,
          "-F 999: children unwound: %d of %d samples in child_work, %d of them under main" %
          (n, prof.total, under_main), prof.top())
chk.finish()
