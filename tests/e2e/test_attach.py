"""attach/detach: heartbeat (3 threads lightly spinning, heartbeat file) is
profiled with `ember record -p PID -d 1 --threads -o x.folded`.
- ember exits 0 in reasonable time (< 15 s for -d 1);
- the profile has samples from more than one thread, all roots are tids of
  the target, light_spin is in the profile;
- afterwards the target is not traced (TracerPid 0), not stopped, still
  alive, and every thread keeps making progress;
- it then dies of our SIGTERM (so it was unharmed until then)."""
import os
import time
import emberlib as E
from hblib import Heartbeat

chk = E.Checker("e2e.attach")
d = E.tmpdir()
hb = Heartbeat(os.path.join(d, "state"))
try:
    out = os.path.join(d, "attach.folded")
    res = E.record(["-p", str(hb.pid), "-d", "1", "--threads", "-o", out], timeout=60)
    chk.check(res.rc == 0, "attach mode exits 0 (got %s)" % res.rc, res.describe())
    chk.check(res.elapsed < 15, "ember -d 1 finished in %.1f s (< 15 s)" % res.elapsed)
    prof = E.load_profile(chk, out, res)
    E.check_format(chk, prof)

    st = hb.read()
    target_tids = set(st["tids"]) | {hb.pid}
    roots = prof.by_root()
    per = {r: sum(c for _, c in v) for r, v in roots.items()}
    listing = "\n".join("%6d  %s" % (c, r) for r, c in sorted(per.items()))
    parsed = {r: E.thread_root(r) for r in roots}
    chk.check(len([r for r in per if per[r] > 0]) >= 2, "samples from more than one thread", listing)
    foreign = [r for r, p in parsed.items() if not p or p[1] not in target_tids]
    chk.check(not foreign, "every root is `name (tid)` of a target thread %s" % sorted(target_tids),
              listing)
    chk.check("light_spin" in prof.frames(), "light_spin (the workers' function) is in the profile", prof.top())

    # The target after detach.
    time.sleep(0.2)
    status = E.proc_status(hb.pid)
    chk.check(hb.p.poll() is None, "target still alive after ember detached")
    chk.check(status.get("TracerPid") == "0", "target no longer traced (TracerPid %s)" % status.get("TracerPid"))
    task_states = {}
    for tid in os.listdir("/proc/%d/task" % hb.pid):
        with open("/proc/%d/task/%s/stat" % (hb.pid, tid)) as f:
            task_states[tid] = f.read().rsplit(")", 1)[1].split()[0]
    chk.check(not any(s in ("T", "t") for s in task_states.values()),
              "no target thread left stopped: %s" % task_states)
    before = hb.read()
    time.sleep(0.6)
    after = hb.read()
    progress = {k: (before[k], after[k]) for k in ("beats", "w0", "w1", "w2")}
    chk.check(all(after[k] > before[k] for k in progress),
              "target keeps making progress after detach (before, after): %s" % progress)
finally:
    rc = hb.stop()
chk.check(rc == -15, "target died of our SIGTERM, not earlier (status %s)" % rc)
chk.finish()
