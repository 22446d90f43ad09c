"""signals, launch mode (`ember record -o f -- CMD`):
- SIGINT sent to ember only         -> CMD gets it, ember exits 130, profile written;
- SIGINT to the process group        (a terminal's Ctrl-C) -> same;
- SIGTERM sent to ember only         -> ember exits 143, profile written;
- CMD SIGKILLs itself mid-run        -> ember exits 137, profile written;
- CMD segfaults mid-run              -> ember exits 139, profile written.
In every case the profile holds the command's hot function, and no process
of the command is left behind."""
import os
import signal
import subprocess
import time
import emberlib as E

chk = E.Checker("e2e.signals")
d = E.tmpdir()
chain = E.target("chain")


def interrupt(name, sig, group):
    out = os.path.join(d, name + ".folded")
    cmd = [E.ember(), "record", "-o", out, "--", chain, "30"]
    t0 = time.monotonic()
    em = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, preexec_fn=E._no_core)
    child = E.wait_for_child_exe(em.pid, chain)
    chk.check(child is not None, "%s: ember started the command" % name)
    time.sleep(1.0)                     # let it collect samples
    if group:
        os.killpg(em.pid, sig)
    else:
        os.kill(em.pid, sig)
    try:
        _, err = em.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        E.kill_group(em.pid)
        _, err = em.communicate()
        chk.check(False, "%s: ember exits within 20 s of the signal" % name, err)
    res = E.Result(cmd, em.returncode, "", err, time.monotonic() - t0)
    print(res.describe())
    want = 128 + sig
    chk.check(res.rc == want, "%s: ember exits %d (got %s)" % (name, want, res.rc))
    if child is not None:
        time.sleep(0.1)
        left = E.pid_alive(child)
        chk.check(not left, "%s: the command (pid %d) is gone" % (name, child))
        if left:
            os.kill(child, signal.SIGKILL)
    E.kill_group(em.pid)
    prof = E.load_profile(chk, out, res)
    n = prof.count(lambda f: "hot" in f)
    chk.check(n >= 10, "%s: profile written with the command's samples (hot in %d >= 10)" % (name, n),
              prof.top(5))


def crash(mode, want):
    out = os.path.join(d, mode + ".folded")
    res = E.record(["-o", out], [E.target("crash"), mode, "1.0"], cwd=d)
    chk.check(res.rc == want, "crash %s: ember exits %d (got %s)" % (mode, want, res.rc))
    prof = E.load_profile(chk, out, res)
    n = prof.count(lambda f: "crash_burn" in f)
    chk.check(n >= 10, "crash %s: profile written with crash_burn in %d samples (>= 10)" % (mode, n),
              prof.top(5))


interrupt("sigint-to-ember", signal.SIGINT, group=False)
interrupt("sigint-to-group", signal.SIGINT, group=True)
interrupt("sigterm-to-ember", signal.SIGTERM, group=False)
crash("kill", 128 + 9)
crash("segv", 128 + 11)
chk.finish()
