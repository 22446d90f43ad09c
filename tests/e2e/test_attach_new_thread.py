"""attach + new thread: heartbeat is attached with
`ember record -p PID -d 3.5 --threads`; once ember has perf events open, the
test touches the trigger file and the target starts a new thread
"late-worker" burning late_burn().
- ember exits 0;
- late_burn has >= 10 samples (it burns a whole CPU for ~2.5 s);
- >= 90% of them are under the root `late-worker (LATE_TID)`."""
import os
import subprocess
import time
import emberlib as E
from hblib import Heartbeat

chk = E.Checker("e2e.attach_new_thread")
d = E.tmpdir()
trigger = os.path.join(d, "trigger")
hb = Heartbeat(os.path.join(d, "state"), trigger)
try:
    out = os.path.join(d, "late.folded")
    cmd = [E.ember(), "record", "-p", str(hb.pid), "-d", "3.5", "--threads", "-o", out]
    t0 = time.monotonic()
    em = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    # Wait until ember has its perf events open (then a little longer for
    # the rest of the attach), so the new thread is surely born after attach.
    # If no perf fd shows up within 2 s, go on anyway (the trigger then only
    # comes a little later than intended).
    deadline = time.monotonic() + 2
    while E.perf_fd_count(em.pid) == 0 and time.monotonic() < deadline and em.poll() is None:
        time.sleep(0.02)
    print("ember had %d perf_event fds after %.2f s" % (E.perf_fd_count(em.pid), time.monotonic() - t0))
    time.sleep(0.3)
    with open(trigger, "w"):
        pass
    try:
        _, err = em.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        E.kill_group(em.pid)
        _, err = em.communicate()
        chk.check(False, "ember -d 3.5 finished within 60 s", err)
    res = E.Result(cmd, em.returncode, "", err, time.monotonic() - t0)
    print(res.describe())
    chk.check(res.rc == 0, "attach mode exits 0 (got %s)" % res.rc)
    st = hb.read()
    late_tid = st.get("late_tid", 0)
    chk.check(late_tid > 0, "target started the late thread (tid %s)" % late_tid)
    prof = E.load_profile(chk, out, res)
    E.check_format(chk, prof)
    n = prof.count(lambda f: "late_burn" in f)
    roots = "\n".join("%6d  %s" % (sum(c for _, c in v), r) for r, v in sorted(prof.by_root().items()))
    chk.check(n >= 10, "the thread created after attach is sampled: late_burn in %d samples (>= 10)" % n,
              roots)
    root = "late-worker (%d)" % late_tid
    under = prof.count(lambda f: "late_burn" in f and f[0] == root)
    chk.check(n > 0 and under >= 0.9 * n, "late_burn samples under %r: %d of %d" % (root, under, n), roots)
finally:
    rc = hb.stop()
chk.check(rc == -15, "target alive until our SIGTERM (status %s)" % rc)
chk.finish()
